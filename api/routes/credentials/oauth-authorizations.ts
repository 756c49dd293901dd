import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { listOAuthAuthorizations, revokeOAuthAuthorization } from '../../../shared/credentials/oauth/authorizations.js';
import { AppError } from '../../../shared/errors.js';
import type { AppDeps } from '../../deps.js';
import { principalOf } from '../../plugins/auth.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const error = z.object({ error: z.string(), message: z.string() }).loose();
const authorizationItem = z.object({
  app_id: z.uuid(),
  app_name: z.string(),
  app_logo_url: z.string().nullable(),
  scopes: z.array(z.string()).describe('union over the caller\'s live tokens of the app'),
  authorized_at: z.string().describe('latest issue time of those tokens'),
  active_token_count: z.number().int().describe('live access tokens'),
});

/** Spec §4.4 `/my/credentials/*`, the OAuth rows (JWT only: access row `myCredentials`). */
export const oauthAuthorizationRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  app.get('/my/credentials/oauth-authorizations', {
    config: { access: 'myCredentials' },
    schema: {
      tags: ['credentials'],
      summary: 'Apps the caller authorized, one item per app; deleted apps hidden, disabled apps shown',
      security: [{ bearer: [] }],
      response: { 200: z.object({ items: z.array(authorizationItem) }), 401: error, 403: error },
    },
  }, async (request) => ({ items: await listOAuthAuthorizations(deps.db, principalOf(request, 'jwt').userId) }));

  app.delete('/my/credentials/oauth-authorizations/:appId', {
    config: { access: 'myCredentials' },
    schema: {
      tags: ['credentials'],
      summary: 'Revoke every token the caller holds for the app (strictly by caller and app); revokedCount counts the active access tokens',
      security: [{ bearer: [] }],
      params: z.object({ appId: z.string() }),
      response: { 200: z.object({ success: z.literal(true), revokedCount: z.number().int() }), 401: error, 403: error, 500: error },
    },
  }, async (request) => {
    const userId = principalOf(request, 'jwt').userId;
    // Not a UUID: no app of that id, so nothing of the caller's to revoke.
    if (!UUID.test(request.params.appId)) return { success: true as const, revokedCount: 0 };
    try {
      const { revokedCount } = await revokeOAuthAuthorization(deps.db, userId, request.params.appId);
      return { success: true as const, revokedCount };
    } catch (cause) {
      request.log.error({ err: cause }, 'revoking an oauth authorization failed');
      throw new AppError(500, 'Failed to revoke oauth authorization');
    }
  });
};
