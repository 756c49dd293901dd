import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppDeps } from '../../deps.js';
import { oauthAppRoutes } from './oauth-apps.js';

const jwk = z.object({ kty: z.string().optional(), kid: z.string().optional(), alg: z.string().optional(), use: z.string().optional() }).loose();

/** Credential routes: the development IdP's public keys and OAuth app management. */
export const credentialsRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  await app.register(oauthAppRoutes, deps);
  app.get('/.well-known/jwks.json', {
    schema: {
      tags: ['credentials'],
      summary: 'Public keys of the built-in identity provider (empty when an external IdP is configured)',
      response: { 200: z.object({ keys: z.array(jwk) }) },
    },
  }, async (_request, reply) => {
    reply.header('cache-control', 'public, max-age=300');
    return deps.idp.publicJwks;
  });
};
