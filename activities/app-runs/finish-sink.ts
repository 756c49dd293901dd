import type { InjectedSinks } from '@temporalio/worker';
import type { AppRunSinks, FinishRunInput } from '../../shared/app-runs/contracts.js';
import { withTimeout } from '../../shared/timeout.js';
import type { ActivityDeps } from '../deps.js';
import { finishAppRun } from './run-events.js';

// How a run ends (docs/app-runs.md "How a run ends"): the workflow hands its ending to the
// `appRuns.finish` sink, which the worker calls on its main thread once the workflow task's code
// has run and before the task completes. A local activity did this before, at the cost of a second
// activation per run and a marker in history: about a fifth of a demo run's CPU.
//
// A sink's call is not recorded in history, so the guarantee comes from the task: the call is made
// before the task's completion is sent, and an error fails the task (`failWorkflowTaskOnError`, our
// SDK patch), which Temporal retries, calling the sink again. The write is idempotent (a finished
// run stays as it is), so a retried or repeated call changes nothing.

const INTERNAL_FAILURE = 'The run failed because of an internal error';

/**
 * How long the write may take before the task is failed and retried, as the local activity's
 * start-to-close timeout did: a write stuck on a lock or a silent connection must not hold the
 * workflow task past Temporal's own timeout. The stuck write is not cancelled; should it land
 * later, it is the same idempotent write.
 */
const FINISH_DEADLINE_MS = 10_000;

/** The database refused the values themselves (SQLSTATE class 22, data exception; 54, a limit exceeded): writing them again would not help. */
const refusesValues = (error: unknown): boolean => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('54'));
};

const runIsGone = (error: unknown): boolean => (error as { type?: unknown } | null)?.type === 'RunNotFound';

/** Ends the run; throws only what a retry of the workflow task can fix. */
export async function finishThroughSink({ db }: Pick<ActivityDeps, 'db'>, input: FinishRunInput, deadlineMs = FINISH_DEADLINE_MS): Promise<void> {
  try {
    await withTimeout(finishAppRun(db, input), deadlineMs, () => new Error(`The final write of run ${input.runId} did not finish within ${deadlineMs} ms`));
  } catch (error) {
    // The row is gone (its team was deleted): there is nothing left to end.
    if (runIsGone(error)) return;
    // Unreachable, restarting, past the deadline, or any error that may pass: the task fails and Temporal retries it.
    if (!refusesValues(error)) throw error;
    // A value PostgreSQL cannot store (a NUL character in text, say): the run still ends, as failed.
    await finishAppRun(db, { runId: input.runId, outcome: { status: 'failed', error: INTERNAL_FAILURE } });
  }
}

/** The sinks every worker registers (worker/create-workers.ts). */
export function createAppRunSinks(deps: Pick<ActivityDeps, 'db'>): InjectedSinks<AppRunSinks> {
  return {
    appRuns: {
      // Not during replay: a replayed task's ending was written when the task first ran.
      finish: { fn: (_info, input) => finishThroughSink(deps, input), callDuringReplay: false, failWorkflowTaskOnError: true },
    },
  };
}
