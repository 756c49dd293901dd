import { allHandlersFinished, condition, continueAsNew, defineUpdate, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import { POLL_NOW_UPDATE, type ConnectorPollInput, type DispatchOutcome, type PollNowResult } from '../../shared/connectors/contracts.js';
import { connectorDispatchActivity, connectorPollActivity } from '../../temporal/activity-options.js';

const { pollConnectorBinding } = proxyActivities<Activities>(connectorPollActivity);
const { dispatchConnectorEvent } = proxyActivities<Activities>(connectorDispatchActivity);

/** `connector poll`: poll now; answers the new mail of a poll that began after the request. */
export const pollNowUpdate = defineUpdate<PollNowResult>(POLL_NOW_UPDATE);

/** Dispatches in flight at once: 100 mails become 100 runs in a few seconds, not a burst of 100 calls. */
const DISPATCH_CONCURRENCY = 8;
/** Polls per run of this workflow before it continues as new, keeping its history short. */
const POLLS_PER_RUN = 100;

/**
 * The polling of one binding, `connector-poll-<bindingId>` (docs/connectors.md "Polling"): poll,
 * dispatch each pending mail as its own run (the runs, `app-run-<runId>`, are in this history as
 * the dispatch activities' results), sleep `pollSeconds`, and again; it ends when the binding is
 * disabled or its connection revoked. Paused (breaker open, connection not active, nothing
 * published) it only looks again each interval.
 */
export async function connectorPollWorkflow(input: ConnectorPollInput): Promise<{ stopped: string }> {
  let pollsDone = 0;
  let polling = false;
  let wantedBy = 0;
  let lastNewEvents = 0;
  setHandler(pollNowUpdate, async () => {
    // A poll already under way may have listed the mailbox before the request: wait for the next one.
    const target = pollsDone + (polling ? 2 : 1);
    wantedBy = Math.max(wantedBy, target);
    await condition(() => pollsDone >= target);
    return { newEvents: lastNewEvents };
  });

  for (let polls = 0; ; polls += 1) {
    polling = true;
    const outcome = await pollConnectorBinding({ bindingId: input.bindingId });
    polling = false;
    lastNewEvents = outcome.kind === 'polled' ? outcome.newEvents : 0;
    pollsDone += 1;
    if (outcome.kind === 'stopped') {
      await condition(allHandlersFinished);
      return { stopped: outcome.reason };
    }
    let waitSeconds = outcome.pollSeconds;
    if (outcome.kind === 'polled') {
      const retryAfter = await dispatchAll(outcome.pending);
      if (retryAfter !== null) waitSeconds = Math.min(waitSeconds, retryAfter);
      else if (outcome.more) waitSeconds = 0;
    }
    if (polls + 1 >= POLLS_PER_RUN || workflowInfo().continueAsNewSuggested) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof connectorPollWorkflow>({ bindingId: input.bindingId, pollsBefore: (input.pollsBefore ?? 0) + polls + 1 });
    }
    if (waitSeconds > 0) await condition(() => wantedBy > pollsDone, waitSeconds * 1000);
  }
}

/**
 * Dispatches oldest first, a few at a time; stops at the first answer to wait on (402, 409, 429)
 * and returns its delay, leaving the rest pending for the next round.
 */
async function dispatchAll(pending: string[]): Promise<number | null> {
  for (let i = 0; i < pending.length; i += DISPATCH_CONCURRENCY) {
    const outcomes: DispatchOutcome[] = await Promise.all(
      pending.slice(i, i + DISPATCH_CONCURRENCY).map((dispatchId) => dispatchConnectorEvent({ dispatchId })),
    );
    const waits = outcomes.flatMap((o) => (o.kind === 'retry' ? [o.retryAfterSeconds] : []));
    if (waits.length > 0) return Math.max(...waits);
  }
  return null;
}
