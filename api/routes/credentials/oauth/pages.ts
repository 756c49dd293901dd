import type { AuthorizeParams } from '../../../../shared/credentials/oauth/rules.js';

/** The consent and sign-in pages: plain server-rendered HTML, every interpolated value escaped. */

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };
export const escapeHtml = (value: string): string => value.replace(/[&<>"'`]/g, (c) => ESCAPES[c]!);

const SCOPE_TEXT: Record<string, string> = {
  'profile:read': 'See your name and email address',
  'orders:checkout': 'Place hardware orders on your behalf',
  'mobile:full': 'Use the mobile app with your account, including your default project',
  'chat:completions': 'Run published apps on your behalf',
};

/** Security headers for every page: no framing (clickjacking), no scripts, nothing cached. */
export const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
  // same-origin, not no-referrer: with no-referrer browsers send `Origin: null` on the form POSTs.
  'referrer-policy': 'same-origin',
  'x-content-type-options': 'nosniff',
} as const;

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 28rem; margin: 3rem auto; padding: 0 1rem; color: #1b1b1b; }
h1 { font-size: 1.3rem; } ul { padding-left: 1.2rem; } code { font-size: .85em; }
textarea { width: 100%; min-height: 6rem; font-family: monospace; }
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

const hiddenFields = (params: AuthorizeParams): string =>
  (Object.entries(params) as Array<[string, string]>)
    .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`)
    .join('\n');

export function consentPage(input: { appName: string; userEmail: string; scopes: string[]; params: AuthorizeParams; csrfToken: string }): string {
  const scopes = input.scopes
    .map((s) => `<li data-scope="${escapeHtml(s)}"><code>${escapeHtml(s)}</code>: ${escapeHtml(SCOPE_TEXT[s] ?? s)}</li>`)
    .join('\n');
  return layout(`Authorize ${input.appName}`, `<h1><span id="app-name">${escapeHtml(input.appName)}</span> wants to access your account</h1>
<p class="muted">Signed in as <strong id="user-email">${escapeHtml(input.userEmail)}</strong></p>
<p>It will be able to:</p>
<ul id="scopes">
${scopes}
</ul>
<form method="post" action="/oauth/authorize">
${hiddenFields(input.params)}
<input type="hidden" name="csrf_token" value="${escapeHtml(input.csrfToken)}">
<div class="actions">
<button type="submit" name="decision" value="approve" id="approve">Approve</button>
<button type="submit" name="decision" value="deny" id="deny">Deny</button>
</div>
</form>`);
}

export function signInPage(input: { appName: string; params: AuthorizeParams; error?: string }): string {
  const error = input.error ? `<p class="error" id="sign-in-error">${escapeHtml(input.error)}</p>` : '';
  return layout('Sign in', `<h1>Sign in to continue to <span id="app-name">${escapeHtml(input.appName)}</span></h1>
${error}
<form method="post" action="/oauth/authorize/sign-in">
${hiddenFields(input.params)}
<label for="id_token">Session token (identity-provider JWT)</label>
<textarea id="id_token" name="id_token" autocomplete="off" spellcheck="false" required></textarea>
<div class="actions"><button type="submit" id="sign-in">Sign in</button></div>
</form>`);
}

export function errorPage(input: { error: string; description: string }): string {
  return layout('Authorization error', `<h1>This authorization request cannot be completed</h1>
<p class="error"><code id="error-code">${escapeHtml(input.error)}</code>: <span id="error-description">${escapeHtml(input.description)}</span></p>
<p class="muted">Return to the app and try again.</p>`);
}
