import { CancellationScope, condition, isCancellation, proxyActivities, proxyLocalActivities, proxySinks, sleep } from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import type { RunPlan } from '../../shared/app-runs/run-plan.js';
import type { ActivityEvaluationInput, AppRunInput, AppRunResult, AppRunSinks, KeyedRunEvent, RunOutcome } from '../../shared/app-runs/contracts.js';
import { exceedsClaimThreshold, isClaim, type Claim } from '../../shared/app-runs/claims.js';
import type { Session } from '../../shared/app-runs/events.js';
import { streamedBlockTypes, waitingBlockTypes, type Block } from '../../shared/documents/graph.js';
import { httpBlockActivity, llmBlockActivity, pdfInputActivity, runEventsLocalActivity } from '../../temporal/activity-options.js';
import { WorkflowBudgetExceeded, errorMessage, evaluateBlock, pdfInputSource, resolveIoBlock, sanitizeError, type EvaluationContext, type IoBlockCall } from '../../shared/app-runs/evaluate.js';
import { initialWalkState, takeReadyBlocks } from '../../shared/app-runs/block-schedule.js';
import { buildGlobalCtx } from '../../shared/app-runs/trace.js';
import { CallbackQueue, deliverRunCallbackEvent } from './callbacks.js';
import { WaitClock, listenForDecisions, runWaitingBlock, type WaitingBlockRunner } from './waits.js';

const { runHttpBlock } = proxyActivities<Activities>(httpBlockActivity);
const { runLlmBlock } = proxyActivities<Activities>(llmBlockActivity);
const { extractPdfText } = proxyActivities<Activities>(pdfInputActivity);

// The plan read is one indexed query: a local activity saves the run two round trips through the server.
// The block-evaluation activities are local too: their input (the run's values) is not recorded in history.
const { appendRunEvents, finishRun, loadRunPlan, evaluateBlockInActivity, storeRunPayload, loadReusedOutputs } = proxyLocalActivities<Activities>(runEventsLocalActivity);
// The run's final write, made by the worker as the workflow task that ends the run completes (activities/app-runs/finish-sink.ts).
const { appRuns } = proxySinks<AppRunSinks>();

/**
 * A block's output, or an I/O block's rendered call, computed in workflow code; by a local activity
 * when something the block can read is a claim (docs/app-runs.md "Large payloads", the activity
 * resolves the claims first) or when its JSONata needs more than the budget workflow code allows
 * (evaluate.ts, `JsonataGuard`). A value that grows over the claim threshold in workflow code is
 * stored too, so only claims reach later activity inputs and results.
 */
async function evaluate(runId: string, block: Block, context: EvaluationContext, inputs: Record<string, unknown>, claimed: boolean): Promise<unknown> {
  const io = block.type === 'llm' || block.type === 'http';
  const inActivity = () => evaluateBlockInActivity({
    runId, blockId: block.id, graph: context.graph, outputs: [...context.outputs], inputs, trigger: context.trigger,
  } satisfies ActivityEvaluationInput);
  // An input block only passes its value on (a claim stays a claim): no values to resolve.
  if (claimed && block.type !== 'input') return inActivity();
  let value: unknown;
  try {
    value = io ? resolveIoBlock(block, context) : await evaluateBlock(block, context, inputs);
  } catch (error) {
    if (error instanceof WorkflowBudgetExceeded) return inActivity();
    throw error;
  }
  if (!exceedsClaimThreshold(value)) return value;
  return storeRunPayload({ runId, key: `${io ? 'request' : 'output'}:${block.id}`, value });
}

/** An I/O block runs as an activity (retried, durable); its templates were rendered by `evaluate`. */
async function runIoBlock(runId: string, block: Block, context: EvaluationContext, inputs: Record<string, unknown>, claimed: boolean): Promise<unknown> {
  const call = await evaluate(runId, block, context, inputs, claimed) as IoBlockCall | Claim;
  if (isClaim(call)) {
    const request = { runId, blockId: block.id, claimedRequest: call };
    return block.type === 'llm' ? runLlmBlock(request) : runHttpBlock(request);
  }
  return call.kind === 'llm'
    ? runLlmBlock({ runId, blockId: block.id, ...call.request })
    : runHttpBlock({ runId, blockId: block.id, ...call.request });
}

const TIMED_OUT = Symbol('timed out');

/**
 * Runs one published app (`app-run-<runId>`). The API has already inserted the `runs` row and
 * appended `run_start`; this walks the graph, appends every other event (one local activity per
 * step), and ends with exactly one terminal event written together with the final `runs` row, by
 * the `appRuns.finish` sink as the last workflow task completes.
 */
export async function appRunWorkflow(input: AppRunInput): Promise<AppRunResult> {
  const { runId } = input;
  const callbacks = new CallbackQueue(runId, input.callback);
  const finish = async (outcome: RunOutcome, events: KeyedRunEvent[] = []): Promise<AppRunResult> => {
    // Runs started before `finishBySink` existed end through the local activity, as their histories say.
    // So does a run with a callback: its terminal event must be stored before its delivery (callbacks.ts).
    if (!input.finishBySink || input.callback) {
      const { status } = await CancellationScope.nonCancellable(() => finishRun({ runId, outcome, events }));
      await callbacks.drained();
      await deliverRunCallbackEvent(runId, input.callback, { terminal: true });
      return { runId, status };
    }
    appRuns.finish({ runId, outcome, events });
    return { runId, status: outcome.status };
  };

  // Registering a handler adds nothing to history: runs that never wait keep theirs as it was.
  const waits: WaitState = { clock: new WaitClock(), decisions: listenForDecisions(), callbacks };
  const walkScope = new CancellationScope();
  const walking = walkScope.run(async () => walkGraph(input, input.plan ?? await loadRunPlan(runId), waits));
  let outcome: WalkResult | typeof TIMED_OUT;
  try {
    outcome = await raceTimeout(walking, walkScope, input.timeoutSeconds, waits.clock);
  } catch (error) {
    if (isCancellation(error)) {
      await finish({ status: 'cancelled', error: 'The run was cancelled' });
      throw error;
    }
    // An activity that kept failing: the run still ends with its one terminal event.
    await finish({ status: 'failed', error: 'The run failed because of an internal error' });
    throw error;
  }
  if (outcome === TIMED_OUT) return finish({ status: 'timed_out', error: `The run did not finish within ${input.timeoutSeconds} seconds` });
  return finish(outcome.outcome, outcome.events);
}

const PAUSED = Symbol('paused');

/**
 * The walk's result, or TIMED_OUT (the walk is then cancelled) once `timeoutSeconds` of work have
 * passed. The time a run waits (a `wait` or `approval` block) does not count: the timer is cancelled
 * when the first wait begins and started again with what is left when the last one ends. A run
 * that never waits has the one timer it always had.
 */
async function raceTimeout<T>(work: Promise<T>, workScope: CancellationScope, timeoutSeconds: number | null, clock: WaitClock): Promise<T | typeof TIMED_OUT> {
  if (timeoutSeconds === null || !(timeoutSeconds > 0)) return work;
  let remainingMs = timeoutSeconds * 1000;
  for (;;) {
    const timerScope = new CancellationScope();
    const startedMs = Date.now();
    const timer = timerScope.run(() => sleep(remainingMs)).then((): typeof TIMED_OUT => TIMED_OUT);
    // `condition` without a timeout is no command: it is looked at as the workflow's state changes.
    // Not cancellable: a cancelled run ends through its walk, which settles what it waits on first.
    const paused = CancellationScope.nonCancellable(() => condition(() => clock.waiting > 0)).then((): typeof PAUSED => PAUSED);
    try {
      const first = await Promise.race([work, timer, paused]);
      if (first === TIMED_OUT) {
        work.catch(() => undefined);
        workScope.cancel();
      }
      if (first !== PAUSED) return first;
    } finally {
      timerScope.cancel();
      timer.catch(() => undefined);
    }
    remainingMs = Math.max(1, remainingMs - (Date.now() - startedMs));
    const resumed = await Promise.race([work, CancellationScope.nonCancellable(() => condition(() => clock.waiting === 0)).then((): typeof PAUSED => PAUSED)]);
    if (resumed !== PAUSED) return resumed;
  }
}

/** How the walk ended, and the events it has not written yet: `finishRun` writes them with the terminal one. */
interface WalkResult {
  outcome: RunOutcome;
  events: KeyedRunEvent[];
}

/** What the `wait` and `approval` blocks of a run share (waits.ts). */
interface WaitState {
  clock: WaitClock;
  decisions: WaitingBlockRunner['decisions'];
  callbacks: CallbackQueue;
}

/**
 * Runs every block once its predecessors have settled; blocks that become ready together run
 * concurrently. Events are appended in one local activity whenever the walk has to wait for a block
 * in flight; the last ones go with the run's final write. A failed block stops further scheduling;
 * the run then fails.
 */
async function walkGraph(input: AppRunInput, plan: RunPlan, waits: WaitState): Promise<WalkResult> {
  const { graph, inputs } = plan;
  const trigger = inputs._trigger ?? null;
  const state = initialWalkState(graph);
  const context: EvaluationContext = { graph, outputs: state.outputs, trigger };
  const sessions: Session[] = [];
  let pending: KeyedRunEvent[] = [];
  // Set from runBlock; typed by assertion because TypeScript does not see closures assign it.
  let failure = null as { blockId: string; error: string } | null;

  // Claims are whole values: large inputs (loadRunPlan) and large outputs. Once there is one, blocks
  // that read values are evaluated by an activity; without any, everything stays in workflow code.
  let claimed = Object.values(inputs).some(isClaim);
  // A retry from the failed block: what completed in the run it retries is taken, not run again.
  const reused = input.reuseFrom
    ? new Map(Object.entries(await loadReusedOutputs({ runId: input.runId, fromRunId: input.reuseFrom })))
    : null;
  const waitRunner: WaitingBlockRunner = {
    runId: input.runId, clock: waits.clock, decisions: waits.decisions,
    waitingWritten: (key) => waits.callbacks.enqueue(key),
    takePending: () => { const events = pending; pending = []; return events; },
    restorePending: (events) => { pending = [...events, ...pending]; },
  };

  const runBlock = async (block: Block): Promise<void> => {
    const streamed = streamedBlockTypes.has(block.type);
    if (reused?.has(block.id)) {
      const output = reused.get(block.id);
      if (isClaim(output)) claimed = true;
      state.outputs.set(block.id, output);
      state.status.set(block.id, 'completed');
      pending.push(
        { key: `${block.id}:block_start`, event: { type: 'block_start', blockId: block.id, blockType: block.type } },
        { key: `${block.id}:block_complete`, event: { type: 'block_complete', blockId: block.id, output, reused: true } },
        { key: `${block.id}:block_end`, event: { type: 'block_end', blockId: block.id } },
      );
      sessions.push({ blockId: block.id, blockType: block.type, blockName: block.name, status: 'completed', output });
      return;
    }
    if (streamed) pending.push({ key: `${block.id}:block_start`, event: { type: 'block_start', blockId: block.id, blockType: block.type } });
    try {
      const pdf = pdfInputSource(block, inputs);
      const output = waitingBlockTypes.has(block.type)
        ? await runWaitingBlock(waitRunner, block, context)
        : block.type === 'llm' || block.type === 'http'
        ? await runIoBlock(input.runId, block, context, inputs, claimed)
        : pdf !== null
          ? (await extractPdfText({ runId: input.runId, blockId: block.id, inputName: block.name || block.id, value: pdf })).text
          : await evaluate(input.runId, block, context, inputs, claimed);
      if (isClaim(output)) claimed = true;
      state.outputs.set(block.id, output);
      state.status.set(block.id, 'completed');
      if (streamed) {
        pending.push(
          { key: `${block.id}:block_complete`, event: { type: 'block_complete', blockId: block.id, output } },
          { key: `${block.id}:block_end`, event: { type: 'block_end', blockId: block.id } },
        );
        sessions.push({ blockId: block.id, blockType: block.type, blockName: block.name, status: 'completed', output });
      }
    } catch (error) {
      // A cancelled wait ends the run as cancelled, not as a failed block.
      if (waitingBlockTypes.has(block.type) && isCancellation(error)) throw error;
      state.status.set(block.id, 'failed');
      const message = sanitizeError(errorMessage(error));
      pending.push({ key: `${block.id}:block_error`, event: { type: 'block_error', blockId: block.id, error: message } });
      failure ??= { blockId: block.id, error: message };
      // Spec §2.20: the failed block's session says so; its error only with trace=full.
      if (streamed) sessions.push({ blockId: block.id, blockType: block.type, blockName: block.name, status: 'error', output: null, ...(input.trace ? { error: message } : {}) });
    }
  };

  const inFlight = new Map<string, Promise<void>>();
  for (;;) {
    const ready = failure ? [] : takeReadyBlocks(graph, state);
    for (const block of ready) {
      state.status.set(block.id, 'running');
      inFlight.set(block.id, runBlock(block).then(() => void inFlight.delete(block.id)));
    }
    if (ready.length > 0) {
      await Promise.race(inFlight.values());
      continue;
    }
    // Nothing new can start. Pure blocks settle inside workflow code, so a chain of them was walked
    // without a round trip per block. With nothing in flight the walk is over; otherwise write the
    // events gathered so far (streaming clients see them while a block works), then look again
    // (blocks may have settled meanwhile) or wait for work in flight.
    if (inFlight.size === 0) break;
    if (pending.length > 0) {
      const events = pending;
      pending = [];
      const { runOpen } = await appendRunEvents({ runId: input.runId, events });
      // Finished elsewhere: the final write is a no-op and reports the row's status.
      if (!runOpen) return { outcome: { status: 'cancelled', error: 'The run was finished elsewhere' }, events: [] };
      continue;
    }
    await Promise.race(inFlight.values());
  }

  // A failed run keeps the sessions of the blocks that completed (spec §2.20).
  if (failure) return { outcome: { status: 'failed', error: sanitizeError(`Block '${failure.blockId}' failed: ${failure.error}`), sessions }, events: pending };
  let completedBlocks = 0;
  for (const status of state.status.values()) if (status === 'completed') completedBlocks += 1;
  const outcome: RunOutcome = {
    status: 'completed', sessions, completedBlocks,
    ...(input.trace ? { globalCtx: buildGlobalCtx(state.outputs, trigger) } : {}),
  };
  return { outcome, events: pending };
}
