import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppDeps } from '../../deps.js';
import { publicError, useInternalErrorCode } from '../../plugins/public-envelope.js';

/** Whether the graph feature is open, and its public label (spec §4.10, CONTRACTS.md). */
export const graphFeatureRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  useInternalErrorCode(app);

  app.get('/features/graph', {
    schema: {
      tags: ['public-config'],
      summary: 'Whether the graph feature is open, and its public label (site setting graph.public)',
      response: {
        200: z.object({ success: z.literal(true), data: z.object({ open: z.boolean(), label: z.string().nullable() }) }),
        500: publicError, 503: publicError,
      },
    },
  }, async (_request, reply) => {
    const setting = await deps.settings.get('graph.public');
    // Operators close the feature expecting it closed now: no cached copy outlives a `settings set`.
    reply.header('cache-control', 'no-cache');
    // Field by field: whatever else the stored value holds (a provider key) stays on the server.
    return { success: true as const, data: { open: setting.open, label: setting.label } };
  });
};
