import type { Selectable } from 'kysely';
import { isTeamMember } from '../access/service.js';
import { findActiveDocument } from '../documents/repository.js';
import type { Database } from '../db/client.js';
import { isUniqueViolation } from '../db/errors.js';
import type { ConnectionStatus, ConnectorBindingsTable } from '../db/types.js';
import { AppError } from '../errors.js';
import { isUuid, newId } from '../ids.js';
import type { WorkflowStart } from '../workflow-starts/outbox.js';
import { recordPollStart } from './poll-start.js';
import * as repo from './repository.js';

// A binding is a document's trigger on a connection (`connector-binding create`, docs/connectors.md
// "Bindings"): polling follows it, and publishing the document needs its connection `active`
// (spec §3.1). A connection is one user's account, so it may only feed documents of their teams.

export type BindingRow = Selectable<ConnectorBindingsTable>;

/** The same bounds as the site setting `connectors.poll_seconds` it overrides. */
const MAX_POLL_SECONDS = 86_400;

export interface CreateBindingInput { documentId: string; connectionId: string; trigger: string; pollSeconds?: number }

export interface CreatedBinding { binding: BindingRow; pollStart: WorkflowStart }

/**
 * Binds a document to a connection's trigger. Refused, with nothing written: a missing or deleted
 * document, a missing or revoked connection, a trigger its connector does not offer, an owner who
 * is not a member of the document's team, and a binding that already exists. Its polling
 * workflow's start is recorded with it (poll-start.ts): the caller starts it now if it can.
 */
export async function createBinding(db: Database, input: CreateBindingInput, options: { taskQueueSuffix?: string } = {}): Promise<CreatedBinding> {
  const { documentId, connectionId, trigger, pollSeconds } = input;
  if (pollSeconds !== undefined && (!Number.isInteger(pollSeconds) || pollSeconds < 1 || pollSeconds > MAX_POLL_SECONDS)) {
    throw new AppError(400, 'invalid_input', `pollSeconds: must be an integer from 1 to ${MAX_POLL_SECONDS}`, { field: 'pollSeconds' });
  }
  try {
    return await db.transaction().execute(async (trx) => {
      const document = isUuid(documentId) ? await findActiveDocument(trx, documentId) : undefined;
      if (!document) throw new AppError(404, 'document_not_found', `No document ${documentId}`);
      // Shared lock: a revoke waits for this insert (and then stops the binding) instead of racing it.
      const connection = isUuid(connectionId) ? await repo.findConnectionForShare(trx, connectionId) : undefined;
      if (!connection || connection.status === 'revoked') throw new AppError(404, 'connection_not_found', `No usable connection ${connectionId}`);
      if (!connection.supported_triggers.includes(trigger)) {
        throw new AppError(400, 'trigger_not_supported', `Connector '${connection.service}' has no trigger '${trigger}' (it offers: ${connection.supported_triggers.join(', ') || 'none'})`);
      }
      if (!(await isTeamMember(trx, document.team_id, connection.user_id))) {
        throw new AppError(403, 'connection_not_in_team', "The connection's owner is not a member of the document's team");
      }
      const binding = await repo.insertBinding(trx, {
        id: newId(), document_id: document.id, connection_id: connection.id, trigger, poll_seconds: pollSeconds ?? null, created_by: connection.user_id,
      });
      return { binding, pollStart: await recordPollStart(trx, binding, document, options.taskQueueSuffix) };
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError(409, 'binding_exists', `Document ${documentId} is already bound to connection ${connectionId} for '${trigger}'`);
    throw error;
  }
}

/** The enabled bindings of a document whose connection is not `active`: each one blocks publishing. */
export async function inactiveBindingsOf(db: Database, documentId: string): Promise<{ bindingId: string; connectionId: string; status: ConnectionStatus }[]> {
  return repo.listInactiveBindings(db, documentId);
}

/** Publishing refused (spec §3.1): counts only, never a credential or an account label. */
export function connectionNotActive(inactive: readonly { connectionId: string }[]): AppError {
  const connections = new Set(inactive.map((b) => b.connectionId)).size;
  return new AppError(409, 'connection_not_active',
    `${inactive.length} trigger binding(s) of this document use ${connections} connection(s) that are not active: test the connection(s) first`);
}
