import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { listProviderCosts, providerCostFacets } from '../../../shared/billing/provider-costs.js';
import type { AppDeps } from '../../deps.js';
import { principalOf } from '../../plugins/auth.js';

const tags = ['billing'];
const filter = {
  provider: z.string().min(1).max(100).optional().describe('exact provider name'),
  model: z.string().min(1).max(200).optional().describe('exact model name'),
};
const providerCost = z.object({
  id: z.string(), provider: z.string(), model: z.string(), input_cost_per_mtok: z.number(), output_cost_per_mtok: z.number(),
  currency: z.string(), updated_at: z.string(),
});
const facet = z.array(z.object({ value: z.string(), count: z.int() }));
const adminOnly = 'Platform administrators only (`user set-admin`): anyone else signed in gets 403.';

/** The model providers' token costs for the price administration screen (CONTRACTS.md "Backend routes beside it"). */
export const providerCostRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  app.get('/admin/billing-rules/provider-costs', {
    config: { access: 'teamAdmin' },
    schema: {
      tags, summary: 'One page of model provider costs, filtered on the server',
      description: `Ordered by provider, model. ${adminOnly}`,
      querystring: z.object({
        ...filter,
        limit: z.coerce.number().int().min(1).max(200).default(50),
        offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
      }),
      response: { 200: z.object({ data: z.array(providerCost), total: z.int() }) },
    },
  }, async (request) => {
    const { provider, model, limit, offset } = request.query;
    return listProviderCosts(deps.db, principalOf(request, 'jwt').userId, { provider, model }, { limit, offset });
  });

  app.get('/admin/billing-rules/provider-costs/facets', {
    config: { access: 'teamAdmin' },
    schema: {
      tags, summary: 'The providers and models to filter by, with their row counts',
      description: `Each list applies the other filter, not its own. ${adminOnly}`,
      querystring: z.object(filter),
      response: { 200: z.object({ providers: facet, models: facet }) },
    },
  }, async (request) => providerCostFacets(deps.db, principalOf(request, 'jwt').userId, request.query));
};
