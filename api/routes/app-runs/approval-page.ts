import type { PendingApproval } from '../../../shared/app-runs/approvals/decide.js';
import { escapeHtml } from '../credentials/oauth/pages.js';

// The approval link's pages (CONTRACTS.md "Long runs"): plain server-rendered HTML that works
// without JavaScript, every interpolated value escaped. The form's fields come from the top-level
// properties of the block's `fields` schema; anything more complex is typed as JSON.

export const APPROVAL_PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  // The token is in the path: never sent on to another site.
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
} as const;

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${escapeHtml(title)}</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 32rem; margin: 3rem auto; padding: 0 1rem; color: #1b1b1b; }
h1 { font-size: 1.3rem; } label { display: block; margin-top: .9rem; font-weight: 600; }
input[type=text], input[type=number], textarea { width: 100%; box-sizing: border-box; padding: .4rem; font-size: 1rem; }
textarea { min-height: 4rem; } #prompt { white-space: pre-wrap; border-left: 3px solid #888; padding-left: .8rem; }
.actions { display: flex; gap: .75rem; margin-top: 1.5rem; } button { padding: .5rem 1.2rem; font-size: 1rem; }
.error { color: #a40000; } .muted { color: #555; font-size: .9rem; }
</style>
</head>
<body>
${body}
</body>
</html>
`;
}

type PropertySchema = { type?: unknown; title?: unknown; description?: unknown };

/** The top-level properties of `fields`, as form inputs named `field.<name>`. */
export function fieldProperties(fields: Record<string, unknown> | null): Array<[string, PropertySchema]> {
  const properties = fields?.properties;
  if (!properties || typeof properties !== 'object') return [];
  return Object.entries(properties as Record<string, PropertySchema>);
}

function fieldInput(name: string, schema: PropertySchema, required: boolean): string {
  const id = `field-${escapeHtml(name)}`;
  const label = escapeHtml(typeof schema.title === 'string' ? schema.title : name);
  const hint = typeof schema.description === 'string' ? `<span class="muted">${escapeHtml(schema.description)}</span>` : '';
  const attrs = `id="${id}" name="field.${escapeHtml(name)}"${required ? ' required' : ''}`;
  switch (schema.type) {
    case 'boolean': return `<label><input type="checkbox" ${attrs} value="true"> ${label}</label>${hint}`;
    case 'number': return `<label for="${id}">${label}</label>${hint}<input type="number" step="any" ${attrs}>`;
    case 'integer': return `<label for="${id}">${label}</label>${hint}<input type="number" step="1" ${attrs}>`;
    case 'string': return `<label for="${id}">${label}</label>${hint}<input type="text" ${attrs}>`;
    default: return `<label for="${id}">${label} (JSON)</label>${hint}<textarea ${attrs}></textarea>`;
  }
}

export function approvalPage(approval: PendingApproval, options: { error?: string } = {}): string {
  const required = new Set(Array.isArray(approval.fields?.required) ? approval.fields.required as string[] : []);
  const inputs = fieldProperties(approval.fields).map(([name, schema]) => fieldInput(name, schema, required.has(name))).join('\n');
  const error = options.error ? `<p class="error" id="error">${escapeHtml(options.error)}</p>` : '';
  return layout('Approval requested', `<h1>Approval requested</h1>
<p id="prompt">${escapeHtml(approval.prompt)}</p>
<p class="muted">Open until <time id="expires-at" datetime="${approval.expiresAt.toISOString()}">${escapeHtml(approval.expiresAt.toUTCString())}</time>. This link works once.</p>
${error}
<form method="post" id="decision-form">
${inputs}
<label for="comment">Comment (optional)</label>
<textarea id="comment" name="comment" maxlength="2000"></textarea>
<div class="actions">
<button type="submit" id="approve" name="decision" value="approve">Approve</button>
<button type="submit" id="reject" name="decision" value="reject" formnovalidate>Reject</button>
</div>
</form>`);
}

export function decidedPage(approved: boolean): string {
  return layout('Thank you', `<h1 id="outcome" data-approved="${approved}">${approved ? 'Approved' : 'Rejected'}</h1>
<p>Your decision was recorded; the run goes on. You can close this page.</p>`);
}

export function gonePage(): string {
  return layout('Link no longer valid', `<h1 id="gone">This approval link is no longer valid</h1>
<p>It was already used, it has expired, or the run no longer waits for it.</p>`);
}
