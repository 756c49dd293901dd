import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  LLM_PROVIDER_NAME, listTeamLlmProviders, putLlmProvider, removeLlmProvider, toLlmProviderView,
} from '../../../shared/llm-providers/service.js';
import type { AppDeps } from '../../deps.js';
import { principalOf } from '../../plugins/auth.js';

const tags = ['llm-providers'];
const teamParams = z.object({ teamId: z.string() });
const providerParams = teamParams.extend({
  name: z.string().regex(LLM_PROVIDER_NAME, 'provider names are 1-40 of a-z, 0-9, _ or -, starting with a letter or digit'),
});
const providerView = z.object({
  name: z.string(), baseUrl: z.string(), hasApiKey: z.boolean(),
  apiKeyPreview: z.string().nullable().describe('last 4 characters of the key; null for keys under 12 characters'),
  updatedAt: z.string(),
});

/**
 * Per-team LLM providers (docs/llm-providers.md): the base URL and key an `llm` block's `provider`
 * names, `default` for blocks without one. Team owners and admins, signed in (access row `teamAdmin`).
 * The key is write-only: sealed with SECRETS_KEY before it is stored, never returned.
 */
export const llmProviderRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { db, secrets }) => {
  app.put('/teams/:teamId/llm-providers/:name', {
    config: { access: 'teamAdmin' },
    schema: {
      tags, summary: 'Create or replace a team LLM provider; the API key is stored encrypted and never returned', params: providerParams,
      body: z.object({
        baseUrl: z.url({ protocol: /^https?$/, error: 'baseUrl must be an http or https URL' }).max(2000)
          .describe('OpenAI-compatible base, e.g. https://api.openai.com/v1 (`/chat/completions` is appended)'),
        apiKey: z.string().min(1).max(4096).describe('write-only'),
      }),
      response: { 200: z.object({ provider: providerView }) },
    },
  }, async (request, reply) => {
    const { teamId, name } = request.params;
    const row = await putLlmProvider(db, secrets, principalOf(request, 'jwt').userId, teamId, name, request.body);
    reply.header('cache-control', 'no-store');
    return { provider: toLlmProviderView(row) };
  });

  app.get('/teams/:teamId/llm-providers', {
    config: { access: 'teamAdmin' },
    schema: { tags, summary: 'List the team LLM providers (never their keys)', params: teamParams, response: { 200: z.object({ providers: z.array(providerView) }) } },
  }, async (request) => ({
    providers: (await listTeamLlmProviders(db, principalOf(request, 'jwt').userId, request.params.teamId)).map(toLlmProviderView),
  }));

  app.delete('/teams/:teamId/llm-providers/:name', {
    config: { access: 'teamAdmin' },
    schema: { tags, summary: 'Delete a team LLM provider (blocks naming it then fail; a deleted `default` falls back to the server\'s)', params: providerParams, response: { 200: z.object({ success: z.literal(true) }) } },
  }, async (request) => {
    await removeLlmProvider(db, principalOf(request, 'jwt').userId, request.params.teamId, request.params.name);
    return { success: true as const };
  });
};
