import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { findRunOfUser, listRunsOfUser, type RunCursor, type RunListRow } from '../../../shared/app-runs/runs-repository.js';
import { formatVersion, versionOfRow } from '../../../shared/documents/versions.js';
import { AppError } from '../../../shared/errors.js';
import { isUuid } from '../../../shared/ids.js';
import type { AppDeps } from '../../deps.js';
import { principalOf } from '../../plugins/auth.js';

const tags = ['runs'];
const statuses = ['running', 'waiting', 'completed', 'failed', 'cancelled', 'timed_out'] as const;

/** Opaque to callers: base64url of `<created_at with µs>|<run id>` of the page's last run. */
export const encodeRunCursor = (row: Pick<RunListRow, 'created_at_exact' | 'id'>): string =>
  Buffer.from(`${row.created_at_exact}|${row.id}`, 'utf8').toString('base64url');

const EXACT_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

export function decodeRunCursor(text: string): RunCursor | null {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(text)) return null;
  const [createdAt, id, ...rest] = Buffer.from(text, 'base64url').toString('utf8').split('|');
  if (rest.length > 0 || !createdAt || !id || !EXACT_TIME.test(createdAt) || !isUuid(id)) return null;
  if (Number.isNaN(Date.parse(createdAt))) return null;
  return { createdAt, id };
}

const SECRET_WORDS = new Set(['password', 'passwd', 'passphrase', 'secret', 'token', 'apikey', 'authorization', 'credential', 'credentials', 'cookie']);
const SECRET_PAIRS = new Set(['api key', 'private key']);
const REDACTED = '[redacted]';

/** `api_key`, `apiKey`, `X-Api-Key`, `accessToken`, `client_secret` … name secrets; `maxTokens`, `compass` do not. */
export function isSecretKey(key: string): boolean {
  const words = key.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase().split(/[^a-z0-9]+/).filter(Boolean);
  return words.some((word, i) => SECRET_WORDS.has(word) || SECRET_PAIRS.has(`${word} ${words[i + 1]}`));
}

/**
 * Inputs as shown to people: values under keys that name a secret (a word of the key is password,
 * passphrase, secret, token, authorization, credential(s), cookie, or api key / private key), at any
 * depth, are replaced by `[redacted]`.
 */
export function redactInputs(value: unknown, depth = 0): unknown {
  if (depth > 64 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => redactInputs(item, depth + 1));
  return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([key, item]) =>
    [key, isSecretKey(key) ? REDACTED : redactInputs(item, depth + 1)]));
}

const runView = z.object({
  id: z.string(),
  status: z.enum(statuses),
  triggerSource: z.string().describe('api-key, schedule, oauth, …'),
  teamId: z.string().describe('the team the run was recorded against (that paid for it)'),
  deploymentId: z.string(),
  documentId: z.string(),
  documentName: z.string(),
  version: z.string().describe('the deployment version, MAJOR.MINOR'),
  error: z.string().nullable(),
  createdAt: z.string(),
  finishedAt: z.string().nullable(),
});
const runDetailView = runView.extend({
  inputs: z.unknown().describe('as recorded, values under secret-looking keys replaced by "[redacted]"'),
  result: z.unknown().nullable(),
});

const toView = (row: RunListRow) => ({
  id: row.id, status: row.status, triggerSource: row.trigger_source, teamId: row.team_id,
  deploymentId: row.deployment_id, documentId: row.document_id, documentName: row.document_name,
  version: formatVersion(versionOfRow(row)), error: row.error,
  createdAt: row.created_at.toISOString(), finishedAt: row.finished_at?.toISOString() ?? null,
});

/** Runs for signed-in users (spec §5.3 "Runs list and details": JWT only; other credentials get 403). */
export const myRunsRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { db }) => {
  app.get('/runs', {
    config: { access: 'runsList' },
    schema: {
      tags, summary: 'The runs of every team you belong to, newest first',
      querystring: z.object({
        limit: z.coerce.number().int().min(1).max(200).default(50),
        cursor: z.string().max(300).optional().describe('nextCursor of the previous page'),
        offset: z.coerce.number().int().min(0).max(100_000).optional().describe('rows to skip; not together with cursor'),
        deploymentId: z.uuid().optional(),
        documentId: z.uuid().optional(),
        teamId: z.uuid().optional(),
        status: z.enum(statuses).optional(),
      }).refine((q) => q.cursor === undefined || q.offset === undefined, { message: 'give cursor or offset, not both', path: ['offset'] }),
      response: { 200: z.object({ runs: z.array(runView), nextCursor: z.string().nullable() }) },
    },
  }, async (request) => {
    const { userId } = principalOf(request, 'jwt');
    const query = request.query;
    let cursor: RunCursor | undefined;
    if (query.cursor !== undefined) {
      cursor = decodeRunCursor(query.cursor) ?? undefined;
      if (!cursor) throw new AppError(400, 'invalid_cursor', 'cursor is not a nextCursor this endpoint returned');
    }
    // One row more than asked tells whether there is a next page.
    const rows = await listRunsOfUser(db, {
      userId, limit: query.limit + 1, cursor, offset: query.offset,
      deploymentId: query.deploymentId, documentId: query.documentId, teamId: query.teamId, status: query.status,
    });
    const page = rows.slice(0, query.limit);
    const last = page.at(-1);
    return { runs: page.map(toView), nextCursor: rows.length > query.limit && last ? encodeRunCursor(last) : null };
  });

  app.get('/runs/:runId', {
    config: { access: 'runsList' },
    schema: {
      tags, summary: 'One run: status, inputs (secrets redacted), result, error, timestamps, version, document name',
      params: z.object({ runId: z.uuid() }),
      response: { 200: z.object({ run: runDetailView }) },
    },
  }, async (request) => {
    const { userId } = principalOf(request, 'jwt');
    const row = await findRunOfUser(db, userId, request.params.runId);
    if (!row) throw new AppError(404, 'Run not found', 'Run not found');
    return { run: { ...toView(row), inputs: redactInputs(row.inputs), result: row.result ?? null } };
  });
};
