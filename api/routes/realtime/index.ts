import cors from '@fastify/cors';
import websocket from '@fastify/websocket';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { Counter, Gauge } from 'prom-client';
import { DataApiError } from '../../../shared/data-api/errors.js';
import { createHttpBroadcast } from '../../../shared/realtime/http-broadcast.js';
import { startRealtime, vsnOf } from '../../../shared/realtime/service.js';
import type { RealtimeLimits } from '../../../shared/realtime/limits.js';
import type { AppDeps } from '../../deps.js';
import type { DataApiDeps } from '../data-api/deps.js';

/** A data-API refusal in PostgREST's shape; anything else is the service's own error. */
function answer(reply: FastifyReply, error: unknown) {
  if (error instanceof DataApiError) return reply.code(error.status).send(error.body);
  throw error;
}

/**
 * `/realtime/v1/websocket`: the data platform's realtime (Phoenix channels) for the unmodified
 * supabase-js (docs/realtime.md). The anon key comes as the `apikey` query parameter and is
 * checked before the upgrade (401 in PostgREST's shape otherwise); the user JWT comes in each
 * join's `access_token`. `/realtime/v1/api/broadcast` is the HTTP broadcast supabase-js falls back
 * to. Hidden from the OpenAPI document: it is a protocol, described in docs/realtime.md.
 */
export const realtimeRoutes: FastifyPluginAsync<AppDeps & DataApiDeps & { realtimeLimits?: Partial<RealtimeLimits> }> = async (app, deps) => {
  const identity = deps.dataApiIdentity;
  const realtime = await startRealtime({
    db: deps.db,
    identity,
    databaseUrl: deps.config.DATABASE_URL,
    limits: deps.realtimeLimits,
    log: (level, message, fields) => app.log[level](fields ?? {}, message),
  });
  // Sockets close as the shutdown starts (preClose must not wait: the listener closes after it);
  // the goodbye on the bus and the listening connection go once the server has stopped.
  await app.register(websocket, {
    options: { maxPayload: realtime.limits.maxFrameBytes },
    preClose: (done) => { realtime.closeSockets(); done(); },
  });
  app.addHook('onClose', async () => { await realtime.close(); });

  // Gauges read when /metrics is scraped; counters follow the hub's counts.
  new Gauge({ name: 'realtime_sockets', help: 'Open realtime websockets of this process', registers: [app.metrics], collect() { this.set(realtime.stats().sockets); } });
  new Gauge({ name: 'realtime_channels', help: 'Joined realtime channels of this process', registers: [app.metrics], collect() { this.set(realtime.stats().channels); } });
  const seen = { local: 0, remote: 0 };
  new Counter({
    name: 'realtime_broadcasts_total', help: 'Broadcasts fanned out by this process, by origin (its clients, other processes)', labelNames: ['origin'] as const, registers: [app.metrics],
    collect() {
      for (const origin of ['local', 'remote'] as const) {
        this.inc({ origin }, realtime.hub.counts[origin] - seen[origin]);
        seen[origin] = realtime.hub.counts[origin];
      }
    },
  });

  app.get('/realtime/v1/websocket', {
    websocket: true,
    schema: { hide: true },
    preValidation: async (request, reply) => {
      const query = (request.query ?? {}) as Record<string, unknown>;
      try {
        await identity.resolve({ headers: {}, query });
      } catch (error) {
        return answer(reply, error);
      }
      if (!vsnOf(query.vsn)) return reply.code(400).send({ code: 'PGRST100', message: `Unsupported vsn ${String(query.vsn)}: 1.0.0 or 2.0.0`, details: null, hint: null });
    },
  }, (socket, request) => {
    const query = request.query as Record<string, string>;
    realtime.accept(socket, vsnOf(query.vsn)!, query.apikey!);
  });

  const broadcastOverHttp = createHttpBroadcast({ db: deps.db, hub: realtime.hub, identity, limits: realtime.limits });
  await app.register(async (scope) => {
    // Any origin, as the rest of the data API: the anon key is public and requests carry no cookies.
    await scope.register(cors, { origin: '*', methods: ['POST', 'OPTIONS'], allowedHeaders: ['authorization', 'apikey', 'content-type', 'x-client-info'], maxAge: 600 });
    scope.post('/broadcast', { schema: { hide: true } }, async (request, reply) => {
      try {
        await broadcastOverHttp(request.headers, request.body);
      } catch (error) {
        return answer(reply, error);
      }
      return reply.code(202).send();
    });
    scope.post<{ Params: { topic: string; event: string } }>('/broadcast/:topic/events/:event', { schema: { hide: true } }, async (request, reply) => {
      try {
        await broadcastOverHttp(request.headers, { messages: [{ topic: request.params.topic, event: request.params.event, payload: request.body }] });
      } catch (error) {
        return answer(reply, error);
      }
      return reply.code(202).send();
    });
  }, { prefix: '/realtime/v1/api' });
};
