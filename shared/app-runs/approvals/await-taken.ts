import type { Database } from '../../db/client.js';
import type { RunEventHub } from '../event-log.js';
import { terminalEventTypes } from '../events.js';

/** The longest a decision's answer waits for the run to take the decision up. */
export const TAKEN_WAIT_MS = 2_000;

/**
 * Resolves once the run has taken a decision up — the approval block's `block_complete`, or the
 * run's end, is in its event log after `afterId` — or after `waitMs`, whichever comes first.
 *
 * Why a decision's 200 waits for this (docs/long-runs.md "Approvals"): the decision is stored and
 * signalled before, so the 200 would otherwise say only "recorded". Waiting lets it say "the run
 * has resumed", and it paces callers that decide in bulk to the speed the runs resume at: 1,000
 * approvals sent at 50-way all got their 200 within a second while their runs completed up to 5.7
 * s later (issue 44's bench). The wait is bounded so a worker that is down (the decision stays
 * stored and is delivered when it is back) does not hold the answer.
 */
export async function awaitDecisionTaken(hub: RunEventHub, db: Database, taken: { runId: string; blockId: string; afterId: number }, waitMs = TAKEN_WAIT_MS): Promise<void> {
  const signal = AbortSignal.timeout(waitMs);
  try {
    for await (const event of hub.events(db, taken.runId, { afterId: taken.afterId, signal })) {
      if (terminalEventTypes.has(event.type)) return;
      if (event.type === 'block_complete' && event.payload.blockId === taken.blockId) return;
    }
  } catch (error) {
    if (!signal.aborted) throw error;
  }
}
