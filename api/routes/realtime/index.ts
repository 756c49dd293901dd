import websocket from '@fastify/websocket';
import type { FastifyPluginAsync } from 'fastify';
import { createDataApiIdentity } from '../../../shared/data-api/identity.js';
import { DataApiError } from '../../../shared/data-api/errors.js';
import { startRealtime, vsnOf } from '../../../shared/realtime/service.js';
import type { RealtimeLimits } from '../../../shared/realtime/limits.js';
import type { AppDeps } from '../../deps.js';

/**
 * `/realtime/v1/websocket`: the data platform's realtime (Phoenix channels) for the unmodified
 * supabase-js (docs/realtime.md). The anon key comes as the `apikey` query parameter and is
 * checked before the upgrade (401 in PostgREST's shape otherwise); the user JWT comes in each
 * join's `access_token`. Graceful shutdown closes every socket with 1001 so clients reconnect to
 * another process.
 */
export const realtimeRoutes: FastifyPluginAsync<AppDeps & { realtimeLimits?: Partial<RealtimeLimits> }> = async (app, deps) => {
  const identity = createDataApiIdentity({ idp: deps.idp, secrets: deps.secrets });
  const realtime = await startRealtime({
    db: deps.db,
    identity,
    databaseUrl: deps.config.DATABASE_URL,
    limits: deps.realtimeLimits,
    log: (message, fields) => app.log.warn(fields ?? {}, message),
  });
  // Sockets close as the shutdown starts (preClose must not wait: the listener closes after it);
  // the goodbye on the bus and the listening connection go once the server has stopped.
  await app.register(websocket, {
    options: { maxPayload: realtime.limits.maxFrameBytes },
    preClose: (done) => { realtime.closeSockets(); done(); },
  });
  app.addHook('onClose', async () => { await realtime.close(); });

  app.get('/realtime/v1/websocket', {
    websocket: true,
    schema: { hide: true },
    preValidation: async (request, reply) => {
      const query = (request.query ?? {}) as Record<string, unknown>;
      try {
        await identity.resolve({ headers: {}, query });
      } catch (error) {
        if (error instanceof DataApiError) return reply.code(error.status).send(error.body);
        throw error;
      }
      if (!vsnOf(query.vsn)) return reply.code(400).send({ code: 'PGRST100', message: `Unsupported vsn ${String(query.vsn)}: 1.0.0 or 2.0.0`, details: null, hint: null });
    },
  }, (socket, request) => {
    const query = request.query as Record<string, string>;
    realtime.accept(socket, vsnOf(query.vsn)!, query.apikey!);
  });
};
