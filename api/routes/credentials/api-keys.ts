import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { listApiKeys, teamApiKeys } from '../../../shared/credentials/api-keys.js';
import { AppError } from '../../../shared/errors.js';
import type { AppDeps } from '../../deps.js';
import { principalOf } from '../../plugins/auth.js';

const teamParams = z.object({ teamId: z.uuid() });
const apiKeyView = z.object({
  id: z.string(), name: z.string(), description: z.string().nullable(),
  limitCredits: z.number().int().nullable().describe('milli-credits; null = unlimited'),
  usageCredits: z.number().int(), createdBy: z.string(), createdAt: z.string(), lastUsedAt: z.string().nullable(),
});
type KeyRow = Awaited<ReturnType<typeof listApiKeys>>[number];
const toView = (k: KeyRow) => ({
  id: k.id, name: k.name, description: k.description, limitCredits: k.limit_credits, usageCredits: k.usage_credits,
  createdBy: k.created_by, createdAt: k.created_at.toISOString(), lastUsedAt: k.last_used_at?.toISOString() ?? null,
});

/** Team API keys (spec §4.4 "Credential-related endpoints"): the team owner manages them. */
export const apiKeyRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { db }) => {
  app.post('/teams/:teamId/api-keys', {
    config: { access: 'teamAdmin' },
    schema: {
      tags: ['credentials'], summary: 'Create an API key; the plaintext token is returned only here',
      params: teamParams,
      body: z.object({
        name: z.string().trim().min(1).max(100),
        description: z.string().max(500).nullish(),
        limitCredits: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).nullish(),
      }).loose(),
      response: { 201: z.object({ apiKey: apiKeyView, token: z.string() }) },
    },
  }, async (request, reply) => {
    const { userId } = principalOf(request, 'jwt');
    const body = request.body;
    if ('expires_at' in body || 'expiresAt' in body) {
      throw new AppError(400, 'expires_at_not_accepted', 'API keys do not take an expiry: delete the key to end it');
    }
    const { id, token } = await teamApiKeys.create(db, userId, {
      teamId: request.params.teamId, name: body.name, description: body.description ?? null, limitCredits: body.limitCredits ?? null,
    });
    const created = (await listApiKeys(db, request.params.teamId)).find((k) => k.id === id)!;
    reply.code(201).header('cache-control', 'no-store');
    return { apiKey: toView(created), token };
  });

  app.get('/teams/:teamId/api-keys', {
    config: { access: 'teamAdmin' },
    schema: { tags: ['credentials'], summary: 'List the team API keys (never their secrets)', params: teamParams, response: { 200: z.object({ items: z.array(apiKeyView) }) } },
  }, async (request) => {
    return { items: (await teamApiKeys.list(db, principalOf(request, 'jwt').userId, request.params.teamId)).map(toView) };
  });

  app.delete('/teams/:teamId/api-keys/:keyId', {
    config: { access: 'teamAdmin' },
    schema: {
      tags: ['credentials'], summary: 'Delete an API key (it stops working at once)',
      params: teamParams.extend({ keyId: z.uuid() }), response: { 200: z.object({ success: z.literal(true) }) },
    },
  }, async (request) => {
    await teamApiKeys.delete(db, principalOf(request, 'jwt').userId, request.params.teamId, request.params.keyId);
    return { success: true as const };
  });
};
