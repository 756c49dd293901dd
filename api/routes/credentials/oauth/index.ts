import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { KNOWN_SCOPES } from '../../../../shared/credentials/oauth/rules.js';
import { userInfo } from '../../../../shared/credentials/oauth/userinfo.js';
import type { AppDeps } from '../../../deps.js';
import { principalOf } from '../../../plugins/auth.js';
import { authorizeRoutes } from './authorize.js';
import { tokenRoutes } from './token.js';

const authError = z.object({ error: z.string(), message: z.string() });

/** The OAuth 2.0 authorization server (spec §4.4, §5.2); docs/oauth.md explains the choices. */
export const oauthRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  await app.register(authorizeRoutes, deps);
  await app.register(tokenRoutes, deps);

  app.get('/oauth/userinfo', {
    config: { access: 'oauthUserinfo' },
    schema: {
      tags: ['oauth'],
      summary: 'The user an OAuth access token acts for (scope `profile:read`)',
      description: '`sub` is the global user id: the same for every client id of every app.',
      security: [{ bearer: [] }],
      response: {
        200: z.object({ sub: z.uuid(), email: z.string(), name: z.string().nullable() }),
        401: authError,
        403: authError,
      },
    },
  }, async (request, reply) => {
    reply.header('cache-control', 'no-store');
    return userInfo(deps.db, principalOf(request, 'oauth').userId);
  });

  // RFC 8414 metadata, so OAuth client libraries can discover the endpoints.
  app.get('/.well-known/oauth-authorization-server', {
    schema: {
      tags: ['oauth'],
      summary: 'OAuth 2.0 authorization server metadata (RFC 8414)',
      response: { 200: z.object({}).loose() },
    },
  }, async (request) => {
    const issuer = `${request.protocol}://${request.host}`;
    return {
      issuer,
      authorization_endpoint: `${issuer}/oauth/authorize`,
      token_endpoint: `${issuer}/oauth/token`,
      revocation_endpoint: `${issuer}/oauth/revoke`,
      userinfo_endpoint: `${issuer}/oauth/userinfo`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      revocation_endpoint_auth_methods_supported: ['none'],
      scopes_supported: [...KNOWN_SCOPES],
    };
  });
};
