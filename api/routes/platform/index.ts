import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { pingDatabase } from '../../../shared/db/health-repository.js';
import { withTimeout } from '../../../shared/timeout.js';
import { probeTemporalWrites } from '../../../temporal/readiness.js';
import type { AppDeps } from '../../deps.js';

const CHECK_TIMEOUT_MS = 2_000;

const checkResult = z.string().describe('`ok`, or why the dependency is not usable');
const readiness = z.object({
  status: z.enum(['ready', 'unavailable']),
  checks: z.object({ postgres: checkResult, temporal: checkResult }),
  failed: z.array(z.enum(['postgres', 'temporal'])),
});

/** Liveness and readiness for orchestrators and for `npm start`. */
export const platformRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  app.get('/healthz', {
    schema: { tags: ['platform'], summary: 'The process is up', response: { 200: z.object({ status: z.literal('ok') }) } },
  }, async () => ({ status: 'ok' as const }));

  app.get('/readyz', {
    schema: {
      tags: ['platform'],
      summary: 'PostgreSQL answers, and Temporal answers and can start work (a write probe)',
      response: { 200: readiness, 503: readiness },
    },
  }, async (_request, reply) => {
    const outcome = (p: Promise<unknown>) =>
      withTimeout(p, CHECK_TIMEOUT_MS, () => new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)).then(() => 'ok', (error: Error) => `unreachable: ${error.message.split('\n')[0]}`);
    const [postgres, temporal] = await Promise.all([
      outcome(pingDatabase(deps.db)),
      outcome(probeTemporalWrites(deps.temporal.connection, deps.config.TEMPORAL_NAMESPACE, CHECK_TIMEOUT_MS)),
    ]);
    const failed = ([['postgres', postgres], ['temporal', temporal]] as const).filter(([, r]) => r !== 'ok').map(([n]) => n);
    reply.code(failed.length ? 503 : 200);
    return { status: failed.length ? 'unavailable' as const : 'ready' as const, checks: { postgres, temporal }, failed };
  });
};
