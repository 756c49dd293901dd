import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { findDeliveryContext, markDeliveryFailed, recordDeliveryAttempt } from '../../shared/app-runs/callbacks/deliveries-repository.js';
import { signingSecretsOf } from '../../shared/app-runs/callbacks/outbound-secret.js';
import { signedCallbackHeaders } from '../../shared/app-runs/callbacks/signing.js';
import type { CallbackDeliveryInput, CallbackDeliveryResult } from '../../shared/app-runs/contracts.js';
import { performHttpRequest } from '../../shared/outbound-http/safe-http-client.js';
import { parseAllowList } from '../../shared/outbound-http/ssrf-guard.js';
import type { ActivityDeps } from '../deps.js';
import { toActivityFailure } from './http-block.js';

const USER_AGENT = 'workflow-app-service callbacks';
/** CONTRACTS.md "Long runs": each attempt waits 10 s for the receiver's answer. */
const ATTEMPT_TIMEOUT_MS = 10_000;
/** A receiver's answer is not read beyond this: only its status matters. */
const MAX_ANSWER_BYTES = 64 * 1024;

function cancellationSignal(): AbortSignal | undefined {
  try {
    return Context.current().cancellationSignal;
  } catch {
    return undefined; // called outside an activity (tests)
  }
}

/**
 * Run callbacks (docs/long-runs.md "Background runs and callbacks"): POST one of the run's stored
 * events to the callback URL, signed with the team's outbound secret, through the `http` block's
 * SSRF-guarded client. Every attempt is logged in `run_callback_deliveries`; a 2xx delivers, anything
 * else throws so Temporal retries (callbackDeliveryActivity). An event already delivered is not sent
 * again (an activity retried after its POST succeeded).
 */
export function createCallbackDeliveryActivities(deps: Pick<ActivityDeps, 'db' | 'settings' | 'secrets'>) {
  const { db } = deps;
  /** The event, its delivery so far, the run's team and its secret: one round trip before a POST. */
  const contextOf = async (input: Pick<CallbackDeliveryInput, 'runId' | 'event'>) => {
    const context = await findDeliveryContext(db, input.runId, input.event);
    // Written before the workflow asks for its delivery; absent only while a write is in doubt.
    if (!context) throw ApplicationFailure.retryable(`run ${input.runId} has no event ${JSON.stringify(input.event)} yet`, 'CallbackEventMissing');
    return context;
  };
  return {
    async deliverRunCallback(input: CallbackDeliveryInput): Promise<CallbackDeliveryResult> {
      const context = await contextOf(input);
      const { event, teamId } = context;
      if (!(input.callback.events as string[]).includes(event.type)) return { eventId: event.id, status: 'not_selected' };
      if (context.delivered) return { eventId: event.id, status: 'delivered' };
      if (!teamId) throw ApplicationFailure.nonRetryable(`run ${input.runId} does not exist`, 'RunNotFound');

      const eventId = String(event.id);
      const body = JSON.stringify({ type: event.type, runId: input.runId, event: { type: event.type, ...event.payload } });
      const headers = signedCallbackHeaders(await signingSecretsOf(db, deps.secrets, teamId, { stored: context.secret }), eventId, body);
      const attempt = { runId: input.runId, eventId: event.id, type: event.type, url: input.callback.url };
      let status: number;
      try {
        const answer = await performHttpRequest(
          { method: 'POST', url: input.callback.url, headers: { 'content-type': 'application/json', ...headers }, body },
          { rules: parseAllowList(await deps.settings.get('http_block.allow_hosts')), timeoutMs: ATTEMPT_TIMEOUT_MS, maxResponseBytes: MAX_ANSWER_BYTES, signal: cancellationSignal(), userAgent: USER_AGENT },
        );
        status = answer.status;
      } catch (error) {
        const failure = toActivityFailure(error);
        await recordDeliveryAttempt(db, { ...attempt, delivered: false, statusCode: null, error: error instanceof Error ? error.message : String(error) });
        throw failure;
      }
      const delivered = status >= 200 && status < 300;
      await recordDeliveryAttempt(db, { ...attempt, delivered, statusCode: status, error: delivered ? null : `The receiver answered ${status}` });
      if (!delivered) throw ApplicationFailure.retryable(`The receiver answered ${status}`, 'CallbackRefused');
      return { eventId: event.id, status: 'delivered' };
    },

    /** The retries ran out (24 h) or the URL was refused: the delivery log says `failed`. */
    async markRunCallbackFailed(input: CallbackDeliveryInput & { error: string }): Promise<void> {
      const { event } = await contextOf(input);
      await markDeliveryFailed(db, input.runId, event.id, input.error);
    },
  };
}
