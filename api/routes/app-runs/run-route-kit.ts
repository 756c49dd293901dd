import type { FastifyInstance, FastifyRequest } from 'fastify';
import { checkBodySize } from '../../../shared/app-runs/limits.js';
import type { StartRunDeps } from '../../../shared/app-runs/run-service.js';
import type { AppDeps } from '../../deps.js';

// What every route that starts a run shares: the body cap and how startRun is wired.

/** Hard ceiling of run bodies; the effective cap is `run.input_limit.maxBodyBytes` (4 MiB by default). */
export const RUN_BODY_CEILING_BYTES = 64 * 1024 * 1024;

/**
 * The body cap is a site setting, so it is checked against Content-Length before the body is read
 * (413 `request_body_too_large`); the routes' own bodyLimit is only the hard ceiling.
 */
export function checkRunBodySizeBeforeParsing(app: FastifyInstance, deps: Pick<AppDeps, 'settings'>): void {
  app.addHook('preParsing', async (request) => {
    const length = Number(request.headers['content-length']);
    if (Number.isFinite(length)) checkBodySize(length, await deps.settings.get('run.input_limit'));
  });
}

/** startRun's dependencies for a request: a start that fails is logged with the request. */
export function runStarter(deps: Pick<AppDeps, 'db' | 'settings' | 'temporal' | 'config'>, request: FastifyRequest): StartRunDeps {
  return {
    db: deps.db, settings: deps.settings, temporal: deps.temporal.client, taskQueueSuffix: deps.config.TEMPORAL_TASK_QUEUE_SUFFIX,
    onStartFailure: (runId, error) => request.log.error({ err: error, runId }, 'run workflow did not start'),
  };
}
