import { ApplicationFailure, CancellationScope, patched, proxyActivities, proxyLocalActivities, sleep } from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import type { RunCallback } from '../../shared/app-runs/callbacks/schemas.js';
import type { CallbackDeliveryInput } from '../../shared/app-runs/contracts.js';
import { callbackDeliveryActivity, callbackFirstAttemptLocalActivity, databaseActivity } from '../../temporal/activity-options.js';

const { deliverRunCallback } = proxyActivities<Activities>(callbackDeliveryActivity);
const { deliverRunCallback: deliverRunCallbackNow } = proxyLocalActivities<Activities>(callbackFirstAttemptLocalActivity);
/** The activity's own first retry delay, kept after a local first attempt. */
const FIRST_RETRY_DELAY = callbackDeliveryActivity.retry!.initialInterval!;
const { markRunCallbackFailed } = proxyActivities<Activities>(databaseActivity);

// Run callbacks (docs/long-runs.md "Background runs and callbacks") as activities of the run's own
// workflow: durable (a restart of anything loses no delivery), and in order, as each one is
// awaited before the run goes on. Only runs with a callback reach this code, so a run without
// one keeps its history exactly as it was.

const TERMINAL_TYPES = ['run_complete', 'run_error'];

/**
 * Delivers one stored event of the run (retried for 24 h); one that cannot be delivered is logged
 * `failed` and the run goes on. Not cancellable: a cancelled run still reports its end.
 */
export async function deliverRunCallbackEvent(runId: string, callback: RunCallback | undefined, event: CallbackDeliveryInput['event']): Promise<void> {
  if (!callback) return;
  // Nothing to deliver: no activity, no history.
  if ('terminal' in event && !callback.events.some((type) => TERMINAL_TYPES.includes(type))) return;
  if ('key' in event && !callback.events.some((type) => event.key.endsWith(`:${type}`) || event.key === type)) return;
  const input: CallbackDeliveryInput = { runId, callback, event };
  await CancellationScope.nonCancellable(async () => {
    try {
      // The first attempt leaves at once from this worker; runs from before it replay as they ran.
      if (patched('callback-first-attempt-local')) {
        try {
          await deliverRunCallbackNow(input);
          return;
        } catch (error) {
          if (refusedForGood(error)) throw error;
          await sleep(FIRST_RETRY_DELAY);
        }
      }
      await deliverRunCallback(input);
    } catch (error) {
      const cause = (error as { cause?: { message?: string } }).cause?.message ?? (error as Error).message;
      await markRunCallbackFailed({ ...input, error: String(cause) });
    }
  });
}

/** A failure no retry can change (the SSRF guard refused the URL, the run is gone). */
function refusedForGood(error: unknown): boolean {
  const cause = (error as { cause?: unknown }).cause;
  return cause instanceof ApplicationFailure && cause.nonRetryable === true;
}

/**
 * The run's callback deliveries in order: each one starts after the one before it has been
 * delivered or given up, while the run goes on (a receiver that is down does not hold up a wait's
 * timer). The terminal event is delivered after all of them (`drained`).
 */
export class CallbackQueue {
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly runId: string, private readonly callback: RunCallback | undefined) {}

  /** A stored event of the run, by its key (e.g. `<blockId>:block_waiting`). */
  enqueue(key: string): void {
    const { runId, callback } = this;
    if (!callback) return;
    this.chain = this.chain.then(() => deliverRunCallbackEvent(runId, callback, { key })).catch(() => undefined);
  }

  drained(): Promise<void> {
    return this.chain;
  }
}
