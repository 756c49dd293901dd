import { Transform } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { checkBodySize } from '../../../shared/app-runs/limits.js';
import type { StartRunDeps } from '../../../shared/app-runs/run-service.js';
import { startPathDeps, type AppDeps } from '../../deps.js';

// What every route that starts a run shares: the body cap and how the run service is wired.

/** Hard ceiling of run bodies; the effective cap is `run.input_limit.maxBodyBytes` (4 MiB by default). */
export const RUN_BODY_CEILING_BYTES = 64 * 1024 * 1024;

/**
 * The body cap is a site setting, so the routes' own bodyLimit is only the hard ceiling and the cap
 * is applied here, before the body is parsed (413 `request_body_too_large`): against Content-Length
 * when the request has one, else by counting a chunked body's bytes as they arrive.
 */
export function checkRunBodySizeBeforeParsing(app: FastifyInstance, deps: Pick<AppDeps, 'settings'>): void {
  app.addHook('preParsing', async (request, _reply, payload) => {
    const length = Number(request.headers['content-length']);
    if (Number.isFinite(length)) {
      checkBodySize(length, await deps.settings.get('run.input_limit'));
      return payload;
    }
    // HTTP/1.1: a body without Content-Length is chunked; without either there is no body to count.
    if (request.headers['transfer-encoding'] === undefined) return payload;
    const limits = await deps.settings.get('run.input_limit');
    let received = 0;
    return payload.pipe(new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        received += chunk.length;
        try {
          checkBodySize(received, limits);
          callback(null, chunk);
        } catch (error) {
          callback(error as Error);
        }
      },
    }));
  });
}

/** The run service's dependencies for a request: a start that fails is logged with the request. */
export function runStarter(deps: Pick<AppDeps, 'db' | 'settings' | 'temporal' | 'config' | 'deployments' | 'runEvents'>, request: FastifyRequest): StartRunDeps {
  return {
    ...startPathDeps(deps), settings: deps.settings, deployments: deps.deployments, runEvents: deps.runEvents,
    taskQueueSuffix: deps.config.TEMPORAL_TASK_QUEUE_SUFFIX,
    onStartFailure: (runId, error) => request.log.error({ err: error, runId }, 'run workflow did not start'),
  };
}
