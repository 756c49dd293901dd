import { internalApiUrl } from '../../shared/config.js';
import type { DispatchOutcome, PollOutcome } from '../../shared/connectors/contracts.js';
import { issueDispatchToken, noteDispatchOutcome } from '../../shared/connectors/dispatch.js';
import { pollBinding } from '../../shared/connectors/polling.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import type { ActivityDeps } from '../deps.js';

/** How long the dispatcher waits after 402 (credits short) and 409 (not executed) before a new token. */
const CREDITS_BACKOFF_SECONDS = 60;
const NOT_EXECUTED_BACKOFF_SECONDS = 5;
const DISPATCH_CALL_TIMEOUT_MS = 30_000;

/**
 * Activities of the polling workflow (docs/connectors.md): one poll of a binding, and the
 * dispatcher, which leases one pending dispatch under a fresh 60-second token and calls the API's
 * dispatch endpoint with it. The call goes to our own API (INTERNAL_API_URL), never to a
 * user-given address, so it does not pass the SSRF guard that every user-given URL passes.
 */
export function createConnectorActivities({ db, settings, secrets, config }: Pick<ActivityDeps, 'db' | 'settings' | 'secrets' | 'config'>) {
  /** A dispatch that already ended: its outcome, or null while it is still pending. */
  async function settled(dispatchId: string): Promise<DispatchOutcome | null> {
    const row = await db.selectFrom('connector_dispatches').select(['status', 'run_id']).where('id', '=', dispatchId).executeTakeFirst();
    if (!row || row.status === 'dropped') return { kind: 'dropped' };
    if (row.status === 'dispatched' && row.run_id) return { kind: 'dispatched', runId: row.run_id, workflowId: workflowIds.appRun(row.run_id) };
    return null;
  }

  return {
    async pollConnectorBinding(input: { bindingId: string }): Promise<PollOutcome> {
      return pollBinding({ db, settings, secrets }, input.bindingId);
    },

    async dispatchConnectorEvent(input: { dispatchId: string }): Promise<DispatchOutcome> {
      const { dispatchId } = input;
      const token = await issueDispatchToken(db, dispatchId);
      // No longer pending: a retried activity whose first try got through finds its run here.
      if (!token) return (await settled(dispatchId)) ?? { kind: 'dropped' };
      const response = await fetch(`${internalApiUrl(config)}/api/connector-triggers/dispatch`, {
        method: 'POST', headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(DISPATCH_CALL_TIMEOUT_MS),
      });
      const body = await response.json().catch(() => ({})) as { runId?: string; error?: string };
      switch (response.status) {
        case 200:
          return { kind: 'dispatched', runId: body.runId!, workflowId: workflowIds.appRun(body.runId!) };
        case 402:
          await noteDispatchOutcome(db, dispatchId, 'insufficient_credits', false);
          return { kind: 'retry', status: 402, retryAfterSeconds: CREDITS_BACKOFF_SECONDS };
        case 409:
          await noteDispatchOutcome(db, dispatchId, body.error ?? 'not_executed', false);
          return { kind: 'retry', status: 409, retryAfterSeconds: NOT_EXECUTED_BACKOFF_SECONDS };
        case 429:
          await noteDispatchOutcome(db, dispatchId, 'rate_limited', false);
          return { kind: 'retry', status: 429, retryAfterSeconds: Math.max(1, Number(response.headers.get('retry-after')) || 30) };
        case 404:
          // Verification failed (binding or connection gone): dropped for good, unless it had got through.
          await noteDispatchOutcome(db, dispatchId, 'not_found', true);
          return (await settled(dispatchId)) ?? { kind: 'dropped' };
        default:
          // The API or its database is down (503), or a bug: retried, with a new token each time.
          throw new Error(`dispatch answered ${response.status}: ${body.error ?? ''}`);
      }
    },
  };
}
