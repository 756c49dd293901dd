import { assertWithinCreditLimit } from '../credentials/api-keys.js';
import type { Database } from '../db/client.js';
import { AppError } from '../errors.js';
import { newId } from '../ids.js';
import { currentBillingRules } from '../billing/billing-rules.js';
import { runBaseCostMilli } from '../billing/pricing.js';
import type { SiteSettingsCache } from '../site-settings/cache.js';
import type { WorkflowStart } from '../workflow-starts/outbox.js';
import { planStart, startNowOrFallBack, type StartPathDeps, type WhenBusy, type WhenEngineDown } from '../workflow-starts/start-path.js';
import { taskQueueName } from '../../temporal/task-queues.js';
import { runSummary, workflowSearchAttributes, type WorkflowSearchMeta } from '../../temporal/search-attributes.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import type { AppRunInput, AppRunStartOptions } from './contracts.js';
import type { DeploymentCache } from '../documents/deployment-cache.js';
import type { RunEventHub, RunNotification } from './event-log.js';
import { findRunDeployment } from '../documents/deployments.js';
import { type DeploymentRow } from '../documents/deployments-repository.js';
import type { ApiSchemaField } from '../documents/graph.js';
import { validateRunInputs, withTrigger } from './input-validation.js';
import { TRIGGER_INPUT_KEY, checkInputLimits } from './limits.js';
import { assertMayRun, budgetKeyOf, payingTeamOf, triggerOf, triggerSourceOf, type RunCaller } from './run-access.js';
import { endRunWithoutWorkflow, insertChargedRun, notStarted, type ChargedRunRow, type StoredRunEvent } from './run-events-repository.js';
import { idempotencyScopeOf, findIdempotentRun, IdempotentReplay } from './run-idempotency.js';
import { claimIdempotencyKey } from './run-idempotency-repository.js';
import { planForRun } from './run-plan.js';
import { vetCallback } from './callbacks/callback-url.js';
import type { CallbackEventType } from './callbacks/schemas.js';
import { formatVersion, versionOfRow } from '../documents/versions.js';

// The one way a run starts (DESIGN.md §3). Every run-starting route and the scheduled-run activity
// call `startAppRun`: the deployment, access, input limits, timeout cap, snapshot, validation,
// credits, the recorded run and its workflow start happen here, in this order, and nowhere else.
// A route only parses its request, names a target and a caller, and renders what comes back.

/** Which deployment to run: named by id or document (with an optional `version`), or already resolved by the route (gateway endpoint, binding, trigger). */
export type RunTarget =
  | { deploymentId: string; version?: string }
  | { documentId: string; version?: string }
  | { deployment: DeploymentRow };

export interface AppRunRequest {
  target: RunTarget;
  caller: RunCaller;
  /**
   * As the caller sent them, or made from the deployment once it is known (the `/v1` API maps its
   * one text to the app's input); a caller's `_trigger` is dropped (the server sets it).
   */
  inputs: Record<string, unknown> | ((deployment: DeploymentRow) => Record<string, unknown>);
  /** The caller's timeout in seconds, capped by `run.max_timeout_seconds`; omitted means the cap. */
  timeoutSeconds?: number;
  /** `trace=full`: the terminal event carries `globalCtx` and session errors. */
  trace?: boolean;
  /** `Idempotency-Key` and a hash of what was asked: a repeat within 24 h gets the same run. */
  idempotency?: { key: string; requestHash: string };
  /**
   * What the caller gets while Temporal cannot be reached (docs/app-runs.md "During an outage"):
   * `queue` (a stream) records the run and its start, which the dispatcher makes once Temporal
   * answers, while the stream waits; `refuse` (a caller waiting for the JSON result) gets 503
   * `dependency_unavailable` and nothing is charged. Default `refuse`.
   */
  whenEngineDown?: WhenEngineDown;
  /**
   * While this process has as many workflow starts in flight as it may (start-gate.ts): `wait`
   * for a place, or `leave` the start to the dispatcher, for a caller answered at once (a
   * background run, a retry). Default `wait`.
   */
  whenBusy?: WhenBusy;
  /** A retry from the failed block: the blocks that completed in this earlier run are reused, not run again (docs/long-runs.md). */
  reuseFrom?: string;
  /** Signed POSTs of the run's events (docs/long-runs.md); a URL the outbound rules refuse is 400 `invalid_callback_url`, before anything is charged. */
  callback?: { url: string; events?: CallbackEventType[] };
}

export interface AdmittedRun {
  runId: string;
  documentId: string;
  deployment: DeploymentRow;
  /** An Idempotency-Key repeat: the earlier run, nothing new recorded or started. */
  replayed: boolean;
  /** The run's `run_start` as stored, so a stream sends it at once and follows the log after it (absent on a replay). */
  startEvent?: StoredRunEvent;
  /** `appRunWorkflow`'s argument (absent on a replay). */
  workflowInput?: AppRunInput;
  /** What every start of it sets, so operators find the run in the Temporal UI (absent on a replay). */
  startOptions?: AppRunStartOptions;
  /** The start recorded with the run (outbox), when the admission recorded one. */
  workflowStart?: WorkflowStart;
}

export interface StartedRun extends AdmittedRun {
  /** A new run's next notification, registered before its workflow was started (event-log.ts `watch`). */
  watch?: RunNotification;
  /**
   * Settles once Temporal has the workflow, or the start was left to the dispatcher; rejects (503)
   * when a `refuse` caller's start failed and the run was withdrawn and refunded.
   */
  started: Promise<void>;
}

export interface RunServiceDeps {
  db: Database;
  settings: Pick<SiteSettingsCache, 'get'>;
  /** The run endpoints' process cache of live deployments (deployment-cache.ts). */
  deployments?: DeploymentCache;
}

export interface StartRunDeps extends RunServiceDeps, StartPathDeps {
  /** The API's run event hub: a new run's follower registers before the start, so it need not read first. */
  runEvents?: Pick<RunEventHub, 'watch'>;
  taskQueueSuffix?: string;
  onStartFailure?: (runId: string, error: Error) => void;
}

/**
 * Admits and starts a run: `admitRun`, which records the run with its workflow start (the outbox),
 * then starts `app-run-<runId>` on Temporal itself. The start is not awaited and begins on the
 * next turn of the event loop, so a stream's first byte (`run_start`) goes out before the client
 * encodes and sends it. A start that fails stays recorded for the dispatcher (`queue`), or is
 * withdrawn with the run, refunded, and `started` rejects with 503 (`refuse`).
 */
export async function startAppRun(deps: StartRunDeps, request: AppRunRequest): Promise<StartedRun> {
  const whenEngineDown = request.whenEngineDown ?? 'refuse';
  const plan = planStart(deps, whenEngineDown);
  const admitted = await admitRun(deps, request, {
    recordStart: { taskQueue: taskQueueName('appRuns', deps.taskQueueSuffix), graceSeconds: plan.graceSeconds },
  });
  const { runId, workflowInput, workflowStart } = admitted;
  // Before anything can write the run's next event (its workflow starts below, or the dispatcher's later).
  const watch = admitted.replayed ? undefined : deps.runEvents?.watch(runId);
  // A replay, or a run queued while Temporal is down: the dispatcher starts it once Temporal answers.
  if (!workflowInput || !workflowStart || !plan.tryNow) return { ...admitted, watch, started: Promise.resolve() };
  const started = new Promise((resolve) => setImmediate(resolve)).then(async () => {
    // Eager start: where an app-runs worker shares this client's connection (`npm start`), the
    // server hands it the first workflow task in its answer; elsewhere the task goes through the queue.
    await startNowOrFallBack(deps, workflowStart, {
      whenEngineDown, whenBusy: request.whenBusy, args: [workflowInput], eager: true, onFailure: (error) => deps.onStartFailure?.(runId, error),
      withdraw: () => endRunWithoutWorkflow(deps.db, runId, notStarted(true)),
    });
  });
  // Awaited by a caller waiting for the result; a stream (`queue`) never sees it reject.
  started.catch(() => watch?.cancel());
  return { ...admitted, watch, started };
}

/**
 * Everything before the workflow start, for starters that start it themselves (a scheduled run
 * starts it as a child): resolves the deployment, checks access, input limits, the snapshot and
 * the inputs, caps the timeout, and in one statement charges the paying team and records the run
 * and its `run_start`. Nothing is written when a check fails.
 */
export async function admitRun(
  deps: RunServiceDeps, request: AppRunRequest, options: { recordStart?: { taskQueue: string; graceSeconds: number } } = {},
): Promise<AdmittedRun> {
  const { db, settings } = deps;
  const { caller } = request;
  const deployment = 'deployment' in request.target
    ? request.target.deployment
    : await findRunDeployment(db, request.target, request.target.version, deps.deployments);
  await assertMayRun(db, deployment, caller);
  const { [TRIGGER_INPUT_KEY]: _callerTrigger, ...given } = typeof request.inputs === 'function' ? request.inputs(deployment) : request.inputs;
  checkInputLimits(given, await settings.get('run.input_limit'));
  const maxTimeout = await settings.get('run.max_timeout_seconds');
  const timeoutSeconds = Math.min(Math.ceil(request.timeoutSeconds ?? maxTimeout), maxTimeout);
  const callback = request.callback && await vetCallback(settings, request.callback);

  const scope = request.idempotency && idempotencyScopeOf(caller);
  const idempotency = scope ? { ...request.idempotency!, scope } : undefined;
  if (idempotency) {
    const earlier = await findIdempotentRun(db, idempotency);
    if (earlier) return { runId: earlier, documentId: deployment.document_id, deployment, replayed: true };
  }
  // A damaged snapshot is refused before anything is charged or recorded (spec §7.2).
  const graph = await planForRun.graph(db, deployment.id);
  if (!graph) throw new AppError(500, 'Invalid deployment snapshot: missing content');
  const problems = validateRunInputs(deployment.api_schema as { inputs: ApiSchemaField[] }, given);
  if (problems.length > 0) throw new AppError(400, 'Input validation failed', 'Input validation failed', { details: problems });
  const apiKey = budgetKeyOf(caller);
  if (apiKey) assertWithinCreditLimit(apiKey);

  const runId = newId();
  const inputs = withTrigger(given, triggerOf(caller), new Date());
  const row: ChargedRunRow = {
    runId, deploymentId: deployment.id, documentId: deployment.document_id, projectId: deployment.project_id, teamId: payingTeamOf(deployment, caller),
    triggerSource: triggerSourceOf(caller), apiKeyId: apiKey?.apiKeyId ?? null, userId: userIdOf(caller), inputs, timeoutSeconds,
  };
  const costMilli = runBaseCostMilli(await currentBillingRules(deps));
  const plan = planForRun.inline(graph, deployment.document_id, inputs);
  const workflowInput: AppRunInput = { runId, trace: request.trace ?? false, timeoutSeconds, finishBySink: true, ...(plan ? { plan } : {}), ...(callback ? { callback } : {}), ...(request.reuseFrom ? { reuseFrom: request.reuseFrom } : {}) };
  const search = searchMetaOf(row, deployment);
  const staticSummary = runSummary(deployment.app_name, formatVersion(versionOfRow(deployment)));
  // The recorded start leaves the inline plan out: a workflow the dispatcher starts loads it by activity.
  const workflowStart: WorkflowStart | undefined = options.recordStart && {
    workflowId: workflowIds.appRun(runId), workflowType: 'appRunWorkflow', taskQueue: options.recordStart.taskQueue,
    args: [{ ...workflowInput, plan: undefined } satisfies AppRunInput], search, staticSummary,
  };
  const record = async (executor: Database): Promise<AdmittedRun> => {
    const charged = await insertChargedRun(executor, row, costMilli, workflowStart && { start: workflowStart, graceSeconds: options.recordStart!.graceSeconds });
    if (!charged) throw new AppError(402, 'insufficient_credits', 'The team does not have enough credits for this run');
    return {
      runId, documentId: deployment.document_id, deployment, replayed: false, startEvent: charged.startEvent, workflowInput,
      startOptions: { typedSearchAttributes: workflowSearchAttributes(search), staticSummary }, ...(workflowStart ? { workflowStart } : {}),
    };
  };
  if (!idempotency) return record(db);
  try {
    // The key is claimed in the run's transaction: a run and its key commit together or not at all.
    return await db.transaction().execute(async (trx) => {
      const recorded = await record(trx);
      const claimed = await claimIdempotencyKey(trx, { scope: idempotency.scope, key: idempotency.key, request_hash: idempotency.requestHash, run_id: runId });
      // Another request with the same key won the race: roll back this run and answer with that one.
      if (!claimed) throw new IdempotentReplay();
      return recorded;
    });
  } catch (error) {
    if (!(error instanceof IdempotentReplay)) throw error;
    const winner = await findIdempotentRun(db, idempotency);
    if (!winner) throw error;
    return { runId: winner, documentId: deployment.document_id, deployment, replayed: true };
  }
}

const userIdOf = (caller: RunCaller): string | null => {
  switch (caller.kind) {
    case 'anonymous': return caller.payer?.userId ?? null;
    case 'webhook': case 'schedule': return null;
    default: return caller.userId;
  }
};

/** Search attributes (team, project, deployment, document, trigger), so operators find the run in the Temporal UI. */
const searchMetaOf = (row: ChargedRunRow, deployment: DeploymentRow): WorkflowSearchMeta => ({
  teamId: row.teamId, projectId: deployment.project_id, deploymentId: deployment.id, documentId: deployment.document_id, triggerSource: row.triggerSource,
});
