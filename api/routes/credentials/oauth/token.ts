import formbody from '@fastify/formbody';
import type { FastifyError } from 'fastify';
import { hasZodFastifySchemaValidationErrors, type FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { OAuthError } from '../../../../shared/credentials/oauth/errors.js';
import { exchangeAuthorizationCode, refreshAccessToken, revokeOAuthToken } from '../../../../shared/credentials/oauth/token-endpoint.js';
import type { AppDeps } from '../../../deps.js';

const param = z.string().max(4096).optional();
const tokenBody = z.object({
  grant_type: param.describe('`authorization_code` or `refresh_token`'),
  client_id: param,
  code: param,
  redirect_uri: param,
  code_verifier: param,
  refresh_token: param,
  scope: param.describe('refresh_token only: a subset of the original scopes'),
});
const revokeBody = z.object({
  token: param,
  token_type_hint: param.describe('`access_token` or `refresh_token` (informational)'),
  client_id: param,
});
const tokenResponse = z.object({
  access_token: z.string(),
  token_type: z.literal('Bearer'),
  expires_in: z.number().int(),
  refresh_token: z.string(),
  scope: z.string(),
});
const oauthError = z.object({ error: z.string(), error_description: z.string().optional() });

/**
 * POST /oauth/token and POST /oauth/revoke (form bodies). Errors use the RFC 6749 §5.2 shape
 * `{ error, error_description }` that OAuth client libraries read, so this plugin has its own
 * error handler.
 */
export const tokenRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  await app.register(formbody);

  app.setErrorHandler((error: FastifyError, request, reply) => {
    reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
    if (error instanceof OAuthError) {
      if (error.status === 401) reply.header('www-authenticate', 'Basic realm="oauth"');
      return reply.code(error.status).send({ error: error.code, error_description: error.description });
    }
    if (hasZodFastifySchemaValidationErrors(error)) {
      const first = error.validation[0];
      const field = first?.instancePath.split('/').filter(Boolean).join('.') || 'body';
      return reply.code(400).send({ error: 'invalid_request', error_description: `${field}: ${first?.message ?? 'invalid'} (parameters must not repeat)` });
    }
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) return reply.code(status).send({ error: 'invalid_request', error_description: error.message });
    request.log.error({ err: error }, 'oauth request failed');
    return reply.code(500).send({ error: 'server_error', error_description: 'Internal server error' });
  });

  app.post('/oauth/token', {
    schema: {
      tags: ['oauth'],
      summary: 'Exchange an authorization code (PKCE) or a refresh token (rotated) for tokens',
      consumes: ['application/x-www-form-urlencoded'],
      body: tokenBody,
      response: { 200: tokenResponse, 400: oauthError, 401: oauthError },
    },
  }, async (request, reply) => {
    const body = request.body;
    reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
    switch (body.grant_type) {
      case 'authorization_code':
        return exchangeAuthorizationCode(deps.db, {
          clientId: body.client_id, code: body.code, redirectUri: body.redirect_uri, codeVerifier: body.code_verifier,
        });
      case 'refresh_token':
        return refreshAccessToken(deps.db, { clientId: body.client_id, refreshToken: body.refresh_token, scope: body.scope });
      case undefined:
      case '':
        throw new OAuthError('invalid_request', 'grant_type is required');
      default:
        throw new OAuthError('unsupported_grant_type', 'Only authorization_code and refresh_token are supported');
    }
  });

  app.post('/oauth/revoke', {
    schema: {
      tags: ['oauth'],
      summary: 'Revoke an access or refresh token (RFC 7009); unknown tokens and other clients\' tokens answer 200 without effect',
      consumes: ['application/x-www-form-urlencoded'],
      body: revokeBody,
    },
  }, async (request, reply) => {
    await revokeOAuthToken(deps.db, { clientId: request.body.client_id, token: request.body.token });
    reply.header('cache-control', 'no-store');
    return reply.code(200).type('text/plain; charset=utf-8').send('');
  });
};
