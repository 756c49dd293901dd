import type { Principal } from '../credentials/principal.js';
import { AppError } from '../errors.js';
import { TRIGGER_INPUT_KEY } from './limits.js';
import { requireVisibleRun, type RetryRunCaller } from './run-access.js';
import { startAppRun, type StartRunDeps } from './run-service.js';

// Retrying a run (CONTRACTS.md "Long runs"): a new run of the same deployment with the same inputs,
// by whoever may follow the original. From the failed block, the blocks that completed in the
// original are not executed again: the new run's workflow reuses their outputs (`reuseFrom`).

export type RetryFrom = 'start' | 'failed_block';

const RETRYABLE = new Set(['failed', 'timed_out', 'cancelled']);

export async function retryRun(deps: StartRunDeps, principal: Principal, runId: string, from: RetryFrom): Promise<{ runId: string; retryOf: string }> {
  await requireVisibleRun(deps.db, runId, principal);
  const original = await deps.db.selectFrom('runs').select(['id', 'status', 'deployment_id', 'team_id', 'inputs', 'trigger_source'])
    .where('id', '=', runId).executeTakeFirstOrThrow();
  if (!RETRYABLE.has(original.status)) throw new AppError(409, 'run_not_failed', `Only a failed, timed-out or cancelled run can be retried (this one is ${original.status})`);

  const { [TRIGGER_INPUT_KEY]: trigger, ...inputs } = (original.inputs ?? {}) as Record<string, unknown>;
  const caller: RetryRunCaller = {
    kind: 'retry', retryOf: original.id, teamId: original.team_id, triggerSource: original.trigger_source,
    userId: 'userId' in principal ? principal.userId : null,
    trigger: isTrigger(trigger) ? trigger : { source: original.trigger_source },
    ...(principal.kind === 'api-key' ? { apiKey: principal } : {}),
  };
  const run = await startAppRun(deps, {
    target: { deploymentId: original.deployment_id }, caller, inputs,
    // Like a background run: recorded now, started as soon as Temporal answers.
    whenEngineDown: 'queue', whenBusy: 'leave',
    ...(from === 'failed_block' ? { reuseFrom: original.id } : {}),
  });
  return { runId: run.runId, retryOf: original.id };
}

function isTrigger(value: unknown): value is { source: string } & Record<string, unknown> {
  return typeof value === 'object' && value !== null && typeof (value as { source?: unknown }).source === 'string';
}
