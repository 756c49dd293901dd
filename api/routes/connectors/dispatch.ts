import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { dispatchByToken } from '../../../shared/connectors/dispatch.js';
import { startPathDeps, type AppDeps } from '../../deps.js';
import { connectorError, tags } from './schemas.js';

/**
 * `POST /api/connector-triggers/dispatch` (spec §4.12 "Dispatch"): for the polling workflow's
 * dispatcher only, by its 60-second token (`Authorization: Bearer`). The body is never parsed: the
 * mail comes from the ledger, so nothing a caller sends can reach the run.
 */
export const dispatchRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  // This scope only: every body is drained unread.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, payload, done) => {
    payload.resume();
    done(null, undefined);
  });

  app.post('/api/connector-triggers/dispatch', {
    schema: {
      tags, summary: 'Internal: start the run of one ledger mail by its dispatch token',
      description: '200 run started; 402 credits short; 409 not executed (binding changed, transient check); 429 rate-limited (Retry-After); 404 anything else, always the same body.',
      response: { 200: z.object({ runId: z.uuid() }), 402: connectorError, 404: connectorError, 409: connectorError, 429: connectorError, 503: connectorError },
    },
  }, async (request, reply) => {
    const header = request.headers.authorization;
    const token = header?.startsWith('Bearer ') ? header.slice('Bearer '.length).trim() : undefined;
    reply.header('cache-control', 'no-store');
    return dispatchByToken({
      ...startPathDeps(deps), settings: deps.settings, deployments: deps.deployments, rateLimiter: deps.rateLimiter,
      taskQueueSuffix: deps.config.TEMPORAL_TASK_QUEUE_SUFFIX,
    }, token);
  });
};
