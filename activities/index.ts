import type { ActivityDeps } from './deps.js';
import { createBlockEvaluationActivities } from './app-runs/block-evaluation.js';
import { createHttpBlockActivities } from './app-runs/http-block.js';
import { createLlmBlockActivities } from './app-runs/llm-block.js';
import { createPdfInputActivities } from './app-runs/pdf-input.js';
import { createAppRunActivities } from './app-runs/run-events.js';
import { createAppRunSinks } from './app-runs/finish-sink.js';
import { createCallbackDeliveryActivities } from './app-runs/callback-delivery.js';
import { createRunWaitActivities } from './app-runs/run-waits.js';
import { createRunReuseActivities } from './app-runs/run-reuse.js';
import { createPlatformActivities } from './platform/probes.js';
import { createScheduledRunActivities } from './schedules/scheduled-run.js';
import { createOrderSagaActivities } from './hardware-sales/order-saga.js';
import { createConnectorActivities } from './connectors/polling.js';
import { createGraphActivities } from './project-graph/graph-jobs.js';

export type { ActivityDeps } from './deps.js';

/** Every activity of the service, with its dependencies injected. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createPlatformActivities(deps),
    ...createAppRunActivities(deps),
    ...createBlockEvaluationActivities(deps),
    ...createLlmBlockActivities(deps),
    ...createHttpBlockActivities(deps),
    ...createPdfInputActivities(deps),
    ...createCallbackDeliveryActivities(deps),
    ...createRunWaitActivities(deps),
    ...createRunReuseActivities(deps),
    ...createScheduledRunActivities(deps),
    ...createOrderSagaActivities(deps),
    ...createConnectorActivities(deps),
    ...createGraphActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;

/** Every sink of the service (calls out of workflow code that return nothing), with its dependencies injected. */
export function createSinks(deps: ActivityDeps) {
  return { ...createAppRunSinks(deps) };
}
