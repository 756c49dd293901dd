import formbody from '@fastify/formbody';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { awaitDecisionTaken } from '../../../shared/app-runs/approvals/await-taken.js';
import { decideApproval, findPendingApprovalByToken, type Decision, type PendingApproval } from '../../../shared/app-runs/approvals/decide.js';
import { approvalTokenHash } from '../../../shared/app-runs/approvals/tokens.js';
import { AppError } from '../../../shared/errors.js';
import type { AppDeps } from '../../deps.js';
import { decisionBody } from './approvals.js';
import { APPROVAL_PAGE_HEADERS, approvalPage, decidedPage, fieldProperties, gonePage } from './approval-page.js';

// The single-use approval link (CONTRACTS.md "Long runs"): `/approve/<token>` for a person without
// an account. The token is the credential (a capability URL): GET shows the plain HTML page, POST
// decides — a form (the page, no JavaScript needed) answers with a page, JSON with JSON. Used,
// expired or unknown: 410, the page or `{ error: "gone" }`.

const params = z.object({ token: z.string().max(200) });

const wantsJson = (request: FastifyRequest) => (request.headers['content-type'] ?? '').toLowerCase().startsWith('application/json');

/** The form's `field.<name>` inputs as data, typed by the `fields` schema (checked by decideApproval). */
function formData(approval: PendingApproval, form: Record<string, unknown>): Record<string, unknown> {
  const data: Record<string, unknown> = {};
  for (const [name, schema] of fieldProperties(approval.fields)) {
    const raw = form[`field.${name}`];
    const text = Array.isArray(raw) ? String(raw.at(-1)) : typeof raw === 'string' ? raw : undefined;
    if (schema.type === 'boolean') { data[name] = text === 'true'; continue; }
    if (text === undefined || text.trim() === '') continue;
    if (schema.type === 'number' || schema.type === 'integer') data[name] = Number.isFinite(Number(text)) ? Number(text) : text;
    else if (schema.type === 'string') data[name] = text;
    else {
      try { data[name] = JSON.parse(text); } catch { data[name] = text; }
    }
  }
  return data;
}

function formDecision(approval: PendingApproval, form: Record<string, unknown>): Decision {
  const approved = form.decision === 'approve';
  if (!approved && form.decision !== 'reject') throw new AppError(400, 'invalid_body', 'decision must be approve or reject');
  const comment = typeof form.comment === 'string' && form.comment.trim() ? form.comment.slice(0, 2000) : undefined;
  // A rejection does not need the fields filled in (the Reject button skips the form's checks).
  return { approved, ...(approved ? { data: formData(approval, form) } : {}), ...(comment ? { comment } : {}), decidedBy: 'link' };
}

export const approvalLinkRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  await app.register(formbody);

  const gone = (reply: FastifyReply, json: boolean) =>
    (json ? reply.code(410).send({ error: 'gone' }) : reply.code(410).headers(APPROVAL_PAGE_HEADERS).send(gonePage()));

  app.get('/approve/:token', {
    schema: { tags: ['app-runs'], summary: 'The approval link\'s page: the prompt, the fields, Approve / Reject (plain HTML)', params },
  }, async (request, reply) => {
    const hash = approvalTokenHash(request.params.token);
    const approval = hash ? await findPendingApprovalByToken(deps.db, hash) : null;
    if (!approval) return gone(reply, false);
    return reply.code(200).headers(APPROVAL_PAGE_HEADERS).send(approvalPage(approval));
  });

  app.post('/approve/:token', {
    schema: {
      tags: ['app-runs'],
      summary: 'Decide through the approval link: a form (decision=approve|reject, field.<name>, comment) or JSON { approved, data?, comment? }',
      consumes: ['application/x-www-form-urlencoded', 'application/json'],
      params,
      body: z.record(z.string(), z.unknown()),
    },
  }, async (request, reply) => {
    const json = wantsJson(request);
    const hash = approvalTokenHash(request.params.token);
    const approval = hash ? await findPendingApprovalByToken(deps.db, hash) : null;
    if (!hash || !approval) return gone(reply, json);
    let decision: Decision;
    if (json) {
      const parsed = decisionBody.safeParse(request.body);
      if (!parsed.success) throw new AppError(400, 'invalid_body', parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; '));
      decision = { ...parsed.data, decidedBy: 'link' };
    } else {
      decision = formDecision(approval, request.body);
    }
    try {
      const decided = await decideApproval(deps.db, deps.temporal.client, { tokenHash: hash }, decision);
      await awaitDecisionTaken(deps.runEvents, deps.db, decided);
      return json ? { runId: decided.runId, blockId: decided.blockId, approved: decided.approved } : reply.code(200).headers(APPROVAL_PAGE_HEADERS).send(decidedPage(decided.approved));
    } catch (error) {
      if (error instanceof AppError && error.status === 410) return gone(reply, json);
      // The page again, saying what is wrong with the data; nothing was decided.
      if (!json && error instanceof AppError && error.status === 400) return reply.code(400).headers(APPROVAL_PAGE_HEADERS).send(approvalPage(approval, { error: error.message }));
      throw error;
    }
  });
};
