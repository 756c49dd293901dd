import { CancellationScope, condition, defineSignal, isCancellation, proxyLocalActivities, setHandler, sleep, upsertSearchAttributes } from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import { APPROVAL_DECIDED_SIGNAL, type ApprovalDecidedSignal, type ApprovalDecision, type EnterRunWaitInput, type KeyedRunEvent } from '../../shared/app-runs/contracts.js';
import { BlockFailure, renderTemplate, type EvaluationContext } from '../../shared/app-runs/evaluate.js';
import { configOf, type Block } from '../../shared/documents/graph.js';
import { runEventsLocalActivity } from '../../temporal/activity-options.js';
import { waitingSearchAttribute } from '../../temporal/search-attributes.js';

const { enterRunWait, leaveRunWait, settleRunApproval } = proxyLocalActivities<Activities>(runEventsLocalActivity);

export const approvalDecided = defineSignal<[ApprovalDecidedSignal]>(APPROVAL_DECIDED_SIGNAL);

// The blocks that pause a run (docs/long-runs.md), inside the run's own workflow: a `wait` is a
// durable timer, an `approval` a `condition` on the `approvalDecided` signal with the approval's
// timeout. Only runs that reach such a block issue any of these commands, so a run without one
// keeps exactly the history it had.

/** How many of the run's blocks wait right now; the run's timeout is paused while any does (raceTimeout). */
export class WaitClock {
  waiting = 0;
}

/** Decisions the signal brought, by block id; the first one for a block is the one that counts. */
export function listenForDecisions(): Map<string, ApprovalDecision> {
  const decisions = new Map<string, ApprovalDecision>();
  setHandler(approvalDecided, ({ blockId, decision }) => {
    if (!decisions.has(blockId)) decisions.set(blockId, decision);
  });
  return decisions;
}

export interface WaitingBlockRunner {
  runId: string;
  clock: WaitClock;
  decisions: Map<string, ApprovalDecision>;
  /** The events the walk gathered and has not written; they are written with `block_waiting`. */
  takePending(): KeyedRunEvent[];
  /** Gives back events that were not written (the block did not wait). */
  restorePending(events: KeyedRunEvent[]): void;
  /** Its `block_waiting` was written: the run's callback may want it (callbacks.ts). */
  waitingWritten(key: string): void;
}

const asText = (value: unknown): string => (typeof value === 'string' ? value : value === null || value === undefined ? '' : JSON.stringify(value));

/** The block's rendered config, as `enterRunWait` takes it. */
function waitRequest(block: Block, context: EvaluationContext): Pick<EnterRunWaitInput, 'wait' | 'approval'> {
  if (block.type === 'wait') {
    const c = configOf(block as Block & { type: 'wait' });
    const render = (value: unknown) => (typeof value === 'string' ? renderTemplate(value, context) : value);
    return { wait: { ...(c.seconds !== undefined ? { seconds: render(c.seconds) } : {}), ...(c.until !== undefined ? { until: render(c.until) } : {}) } };
  }
  const c = configOf(block as Block & { type: 'approval' });
  const prompt = asText(renderTemplate(c.prompt, context)).trim();
  if (!prompt) throw new BlockFailure('the approval prompt rendered empty');
  return { approval: { prompt, fields: c.fields ?? null, ...(c.timeoutSeconds !== undefined ? { timeoutSeconds: c.timeoutSeconds } : {}) } };
}

/** Runs a `wait` or `approval` block: its output, `{ waitedSeconds }` or the approval's outcome. */
export async function runWaitingBlock(runner: WaitingBlockRunner, block: Block, context: EvaluationContext): Promise<unknown> {
  const request = waitRequest(block, context);
  const events = runner.takePending();
  const startedMs = Date.now();
  const entry = await enterRunWait({ runId: runner.runId, blockId: block.id, events, nowMs: startedMs, ...request });
  if (entry.kind !== 'waiting') {
    runner.restorePending(events);
    if (entry.kind === 'problem') throw new BlockFailure(entry.message);
    if (entry.kind === 'run_closed') throw new BlockFailure('the run was finished elsewhere');
    return { waitedSeconds: 0 };
  }

  runner.waitingWritten(`${block.id}:block_waiting`);
  beginWaiting(runner.clock, block.type);
  try {
    // Timed from the deadline the activity wrote (`until`, `expiresAt`), not from when its answer
    // came back: a run that waited for its write still wakes at the time its event says.
    const remainingMs = Math.max(1, Date.parse(entry.until) - Date.now());
    if (block.type === 'wait') {
      await sleep(remainingMs);
      return { waitedSeconds: Math.round((Date.now() - startedMs) / 1000) };
    }
    return await awaitDecision(runner, block.id, remainingMs);
  } finally {
    // Cancelled: the run ends (its final write ends `waiting` too), so only a wait that ended goes back to `running`.
    if (endWaiting(runner.clock) && !CancellationScope.current().consideredCancelled) await leaveRunWait({ runId: runner.runId });
  }
}

async function awaitDecision(runner: WaitingBlockRunner, blockId: string, timeoutMs: number): Promise<unknown> {
  let decision: ApprovalDecision | null | undefined;
  try {
    const decided = await condition(() => runner.decisions.has(blockId), timeoutMs);
    // A decision stored just before the timer fired wins over the timeout (its approver was told 200).
    decision = decided ? runner.decisions.get(blockId)! : await settleRunApproval({ runId: runner.runId, blockId, status: 'timed_out' });
  } catch (error) {
    if (isCancellation(error)) await CancellationScope.nonCancellable(() => settleRunApproval({ runId: runner.runId, blockId, status: 'cancelled' }));
    throw error;
  }
  if (!decision) return { approved: false, data: null, decidedBy: null, decidedAt: null, timedOut: true };
  return { approved: decision.approved, data: decision.data ?? null, decidedBy: decision.decidedBy, decidedAt: decision.decidedAt, timedOut: false };
}

/** The first wait of the run makes it findable (`WfWaiting='<block type>'`); the clock pauses the run's timeout. */
function beginWaiting(clock: WaitClock, blockType: string): void {
  if (clock.waiting === 0) upsertSearchAttributes([{ key: waitingSearchAttribute, value: blockType }]);
  clock.waiting += 1;
}

/** True when this was the run's last wait: `WfWaiting` is removed. */
function endWaiting(clock: WaitClock): boolean {
  clock.waiting -= 1;
  if (clock.waiting > 0) return false;
  upsertSearchAttributes([{ key: waitingSearchAttribute, value: null }]);
  return true;
}
