import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { findDocsSessionTokenExpiry } from '../../../shared/credentials/oauth/docs-session.js';
import { secondsUntil } from '../../../shared/credentials/oauth/rules.js';
import { hasValidTokenShape } from '../../../shared/credentials/tokens.js';
import type { AppDeps } from '../../deps.js';

/** The docs site's session cookie (spec §4.6: `docs_session` with the service's own prefix). */
export const DOCS_SESSION_COOKIE = 'wf_docs_session';
const COOKIE_FLAGS = 'Path=/; HttpOnly; Secure; SameSite=Lax';
const docsError = z.object({ error: z.string() });

/**
 * POST /docs-auth/sync-cookie and POST /docs-auth/logout (public). The body is read as raw text
 * by this plugin's own parser, so malformed JSON is this endpoint's 400 `invalid_body` (after the
 * configuration check, in the spec's order) rather than the global `invalid_json`.
 */
export const docsAuthRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body));

  async function docsClientId(): Promise<string> {
    const stored = await deps.settings.getRaw('DOCS_AUTH_OAUTH_CLIENT_ID');
    if (typeof stored === 'string' && stored.trim()) return stored.trim();
    return deps.config.DOCS_AUTH_OAUTH_CLIENT_ID ?? '';
  }

  app.post('/docs-auth/sync-cookie', {
    schema: {
      tags: ['docs-auth'],
      summary: 'Turn a docs-site OAuth access token into the HttpOnly docs session cookie',
      description: 'Body `{ "access_token": "wfo-…" }` (JSON). Checks in order: client id configured (500 `service_misconfigured`), '
        + 'valid JSON (400 `invalid_body`), token format (400 `access_token_required`), token live, app enabled and issued to the '
        + 'docs client (401 `invalid_token`).',
      consumes: ['application/json'],
      response: { 200: z.object({ ok: z.literal(true), expiresIn: z.number().int().min(0) }), 400: docsError, 401: docsError, 500: docsError },
    },
  }, async (request, reply) => {
    reply.header('cache-control', 'no-store');
    const clientId = await docsClientId();
    if (!clientId) return reply.code(500).send({ error: 'service_misconfigured' });
    let body: unknown;
    try {
      body = typeof request.body === 'string' ? JSON.parse(request.body) : undefined;
    } catch {
      body = undefined;
    }
    if (body === undefined) return reply.code(400).send({ error: 'invalid_body' });
    const token = body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>).access_token : undefined;
    if (typeof token !== 'string' || !hasValidTokenShape('oauthAccess', token)) return reply.code(400).send({ error: 'access_token_required' });
    let expiresAt: Date | null;
    try {
      expiresAt = await findDocsSessionTokenExpiry(deps.db, token, clientId);
    } catch (error) {
      request.log.warn({ err: error }, 'docs-auth token check failed');
      expiresAt = null;
    }
    if (!expiresAt) return reply.code(401).send({ error: 'invalid_token' });
    const expiresIn = secondsUntil(expiresAt);
    reply.header('set-cookie', `${DOCS_SESSION_COOKIE}=${encodeURIComponent(token)}; Max-Age=${expiresIn}; ${COOKIE_FLAGS}`);
    return { ok: true as const, expiresIn };
  });

  app.post('/docs-auth/logout', {
    schema: { tags: ['docs-auth'], summary: 'Clear the docs session cookie; always 204' },
  }, async (_request, reply) => {
    reply.header('set-cookie', `${DOCS_SESSION_COOKIE}=; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT; ${COOKIE_FLAGS}`);
    reply.header('cache-control', 'no-store');
    return reply.code(204).send();
  });
};
