import { findRunDeployment } from '../documents/deployments.js';
import type { Database } from '../db/client.js';
import type { ConnectionStatus } from '../db/types.js';
import { AppError } from '../errors.js';
import { newId } from '../ids.js';
import type { SecretKeyRing } from '../secrets/key-ring.js';
import type { SiteSettingsCache } from '../site-settings/cache.js';
import { recordUpstreamOutcome } from './connection-test.js';
import type { PollOutcome } from './contracts.js';
import type { InboxPoll, MailboxCursor } from './imap-poll.js';
import { probeErrorCodeOf } from './imap-probe.js';
import { connectorServices } from './services.js';
import { openCredentials, vettedAddress } from './upstream.js';
import {
  advancePollCursor, findPollCursor, insertConnectorEvents, insertDispatches, listConnectorEventIds, listPendingDispatchIds, loadBindingState,
  type BindingState,
} from './polling-repository.js';

// One poll of a binding (docs/connectors.md "Polling"): decide whether to poll at all, read the
// mailbox after the binding's cursor, and record each new mail once in the ledger with one
// dispatch for this binding, in one transaction with the cursor. Overlapping polls (the timer and
// `connector poll`, or a retried activity) are harmless: the ledger and the dispatches are unique,
// and the cursor only moves forward.

export interface PollDeps { db: Database; secrets: SecretKeyRing; settings: Pick<SiteSettingsCache, 'get'> }

/** The most pending dispatches one poll hands to the workflow; the rest follow on the next. */
const MAX_PENDING = 1_000;

/** Why a binding's mail may not run now: `stop` for good (the binding or connection is gone), `pause` for a while. */
export function bindingHold(state: BindingState | undefined): { hold: 'stop' | 'pause'; reason: string } | null {
  if (!state) return { hold: 'stop', reason: 'binding_not_found' };
  if (!state.enabled) return { hold: 'stop', reason: 'binding_disabled' };
  if (state.connection_status === 'revoked') return { hold: 'stop', reason: 'connection_revoked' };
  if (state.connector_status !== 'approved') return { hold: 'pause', reason: 'connector_not_approved' };
  if (state.circuit_broken) return { hold: 'pause', reason: 'connector_circuit_broken' };
  if (state.connection_status !== 'active') return { hold: 'pause', reason: 'connection_not_active' };
  return null;
}

/** The document's live deployment a run of this binding runs, or null while it has none. */
export async function liveDeploymentOf(db: Database, documentId: string) {
  try {
    return await findRunDeployment(db, { documentId }, undefined);
  } catch (error) {
    if (error instanceof AppError && error.status === 404) return null;
    throw error;
  }
}

async function readCursor(db: Database, bindingId: string): Promise<MailboxCursor | null> {
  const row = await findPollCursor(db, bindingId);
  return row ? { uidvalidity: Number(row.uidvalidity), lastUid: Number(row.last_uid) } : null;
}

/** The ledger rows, this binding's dispatches and the cursor, together; returns how many dispatches are new. */
async function recordPoll(db: Database, state: BindingState, poll: InboxPoll): Promise<number> {
  const { uidvalidity, lastUid } = poll.cursor;
  return db.transaction().execute(async (trx) => {
    let created = 0;
    if (poll.mails.length > 0) {
      await insertConnectorEvents(trx, poll.mails.map(({ uid, inputs }) => ({
        id: newId(), connection_id: state.connection_id, uidvalidity, uid, message_id: inputs.messageId, subject: inputs.subject,
        from_header: inputs.from, to_header: inputs.to, sent_at: inputs.date, text_body: inputs.text,
      })));
      // Ids of this poll's mail, whether this poll or an overlapping one recorded it.
      const events = await listConnectorEventIds(trx, state.connection_id, uidvalidity, poll.mails.map((m) => m.uid));
      created = await insertDispatches(trx, events.map((e) => ({ id: newId(), event_id: e.id, binding_id: state.id })));
    }
    // Forward only within a generation; a new generation replaces it (a re-baseline).
    await advancePollCursor(trx, state.id, uidvalidity, lastUid);
    return created;
  });
}

async function pendingDispatches(db: Database, bindingId: string): Promise<string[]> {
  const rows = await listPendingDispatchIds(db, bindingId, MAX_PENDING);
  return rows.map((r) => r.id);
}

export async function pollBinding(deps: PollDeps, bindingId: string): Promise<PollOutcome> {
  const { db } = deps;
  const state = await loadBindingState(db, bindingId);
  const pollSeconds = state?.poll_seconds ?? await deps.settings.get('connectors.poll_seconds');
  const hold = bindingHold(state);
  if (hold?.hold === 'stop') return { kind: 'stopped', reason: hold.reason };
  if (hold) return { kind: 'paused', reason: hold.reason, pollSeconds };
  const binding = state!;
  // Mail that arrives while nothing is published does not wait for a release: polling starts with it.
  if (!(await liveDeploymentOf(db, binding.document_id))) return { kind: 'paused', reason: 'document_not_published', pollSeconds };
  const service = connectorServices[binding.service];
  if (!service) return { kind: 'paused', reason: 'connector_not_implemented', pollSeconds };

  const fields = openCredentials(deps.secrets, { id: binding.connection_id, credentials_sealed: binding.credentials_sealed });
  const address = await vettedAddress(deps.settings, service.endpoint(fields));
  const pending = () => pendingDispatches(db, binding.id);
  if (address === null) return { kind: 'polled', newEvents: 0, pending: await pending(), pollSeconds, errorCode: 'gateway_unreachable' };
  let poll: InboxPoll;
  try {
    poll = await service.poll(fields, address, await readCursor(db, binding.id));
  } catch (error) {
    const errorCode = probeErrorCodeOf(error);
    // The same state table as a test (spec §3.1): only a refused credential changes the connection.
    if (errorCode === 'credential_invalid') {
      await recordUpstreamOutcome(db, { id: binding.connection_id, status: binding.connection_status as ConnectionStatus }, { ok: false, errorCode });
      return { kind: 'paused', reason: 'connection_not_active', pollSeconds };
    }
    return { kind: 'polled', newEvents: 0, pending: await pending(), pollSeconds, errorCode };
  }
  const newEvents = await recordPoll(db, binding, poll);
  return { kind: 'polled', newEvents, pending: await pending(), pollSeconds, ...(poll.more ? { more: true } : {}) };
}
