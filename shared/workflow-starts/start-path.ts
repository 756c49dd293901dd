import type { Client } from '@temporalio/client';
import type { Database } from '../db/client.js';
import { dependencyUnavailable, isDatabaseUnavailable, isTemporalUnavailable } from '../dependency-errors.js';
import type { TemporalAvailability } from '../../temporal/availability.js';
import type { StartGate } from './start-gate.js';
import { forgetWorkflowStart, NO_GRACE, recordWorkflowStart, REQUESTER_GRACE_SECONDS, startWorkflowNow, withdrawWorkflowStart, type WorkflowStart } from './outbox.js';

// The start path of every workflow a request starts, after its start is recorded (outbox.ts):
// try it now; when Temporal cannot take it, either leave it to the dispatcher (`queue`) or take
// it back and answer 503 (`refuse`). Which one is the route's decision (docs/decisions.md
// "Faults"); the rule itself lives here once.

export interface StartPathDeps {
  db: Database;
  temporal: Client;
  /** Whether Temporal answered lately: while it does not, starts are not tried at all. */
  availability?: Pick<TemporalAvailability, 'available' | 'assertAvailable' | 'reportFailure'>;
  /** The process's bound on starts in flight (start-gate.ts); none in tests that start one at a time. */
  gate?: StartGate;
}

export type WhenEngineDown = 'queue' | 'refuse';
/**
 * While the process has as many starts in flight as it may: `wait` for a place, or `leave` the
 * recorded start to the dispatcher (due after its grace), for a caller that was already answered.
 */
export type WhenBusy = 'wait' | 'leave';

/** The requester's own start may take this long before it counts as failed. */
const START_DEADLINE_MS = 5_000;

/** Whether to try the start now, and the grace the dispatcher gives it: throws 503 when refusing during a known outage. */
export function planStart(deps: StartPathDeps, whenEngineDown: WhenEngineDown): { tryNow: boolean; graceSeconds: number } {
  const engineDown = deps.availability ? !deps.availability.available : false;
  // Refused before anything is written: the caller learns at once and retries.
  if (engineDown && whenEngineDown === 'refuse') deps.availability!.assertAvailable();
  return { tryNow: !engineDown, graceSeconds: engineDown ? NO_GRACE : REQUESTER_GRACE_SECONDS };
}

/**
 * Makes a recorded start now, within the process's bound on starts in flight (`whenBusy`). On
 * failure: `queue` leaves it recorded for the dispatcher; `refuse` calls `withdraw` (which takes
 * back the start, and whatever was recorded with it, unless a dispatcher holds it) and throws 503
 * `dependency_unavailable` (or the start's own error when it was not an outage). When a dispatcher
 * holds it, the start goes ahead and nothing is thrown. Returns whether this call made the start
 * (false: it was left to the dispatcher).
 */
export async function startNowOrFallBack(
  deps: StartPathDeps, start: WorkflowStart,
  options: { whenEngineDown: WhenEngineDown; whenBusy?: WhenBusy; withdraw: () => Promise<boolean>; args?: unknown[]; eager?: boolean; onFailure?: (error: Error) => void },
): Promise<boolean> {
  const call = () => startWorkflowNow(deps.temporal, start, { args: options.args, eager: options.eager, deadlineMs: START_DEADLINE_MS });
  try {
    const started = !deps.gate ? call() : options.whenBusy === 'leave' ? deps.gate.runIfFree(call) : deps.gate.run(call);
    if (!started) return false; // every place taken: left to the dispatcher
    await started;
    return true;
  } catch (error) {
    options.onFailure?.(error as Error);
    const outage = deps.availability?.reportFailure(error) ?? isTemporalUnavailable(error);
    if (options.whenEngineDown === 'refuse' && await withdrawUnlessDatabaseDown(options.withdraw)) throw outage ? dependencyUnavailable('temporal') : error;
    return false;
  }
}

/**
 * A withdrawal that cannot reach the database leaves the start recorded: the dispatcher makes it
 * once Temporal answers, so the caller waits for a run that will happen instead of being told
 * 503 about a run that was not taken back.
 */
async function withdrawUnlessDatabaseDown(withdraw: () => Promise<boolean>): Promise<boolean> {
  try {
    return await withdraw();
  } catch (error) {
    if (isDatabaseUnavailable(error)) return false;
    throw error;
  }
}

/** Temporal has the workflow; a row left behind (the database went away) is the dispatcher's to clear. */
async function forgetQuietly(db: Database, workflowId: string): Promise<void> {
  await forgetWorkflowStart(db, workflowId).catch((error: unknown) => {
    if (!isDatabaseUnavailable(error)) throw error;
  });
}

/**
 * The whole path for a request whose workflow has no rows of its own to record it with (a
 * hand-triggered schedule, a connector dispatch): record, start now, forget once Temporal has it.
 */
export async function startWorkflowFromRequest(deps: StartPathDeps, start: WorkflowStart, whenEngineDown: WhenEngineDown): Promise<void> {
  const plan = planStart(deps, whenEngineDown);
  await recordWorkflowStart(deps.db, start, { graceSeconds: plan.graceSeconds });
  if (plan.tryNow) await startRecordedWorkflow(deps, start, whenEngineDown);
}

/**
 * The path after a start was recorded in the caller's own transaction, with the rows it starts
 * for (an order and its saga): start now, forget once Temporal has it; on failure as
 * startNowOrFallBack says (`refuse` withdraws only the start: rows that need undoing are the
 * caller's to pass as `withdraw`).
 */
export async function startRecordedWorkflow(
  deps: StartPathDeps, start: WorkflowStart, whenEngineDown: WhenEngineDown,
  withdraw: () => Promise<boolean> = () => withdrawWorkflowStart(deps.db, start.workflowId),
): Promise<void> {
  if (await startNowOrFallBack(deps, start, { whenEngineDown, withdraw })) await forgetQuietly(deps.db, start.workflowId);
}
