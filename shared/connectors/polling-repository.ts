import { sql, type Insertable } from 'kysely';
import type { Database } from '../db/client.js';
import type { ConnectorDispatchesTable, ConnectorEventsTable } from '../db/types.js';

// Kysely queries only, for polling a binding: whether to poll and what a poll records live in polling.ts.

/** A binding with everything that decides whether it polls and whether its mail may run. */
export async function loadBindingState(db: Database, bindingId: string) {
  return db.selectFrom('connector_bindings as b')
    .innerJoin('connector_connections as c', 'c.id', 'b.connection_id')
    .innerJoin('connectors as k', 'k.service', 'c.service')
    .select([
      'b.id', 'b.enabled', 'b.poll_seconds', 'b.document_id', 'b.trigger', 'b.created_by', 'b.connection_id',
      'c.status as connection_status', 'c.service', 'c.user_id as connection_owner', 'c.credentials_sealed',
      'k.status as connector_status', 'k.circuit_broken',
    ])
    .where('b.id', '=', bindingId)
    .executeTakeFirst();
}
export type BindingState = NonNullable<Awaited<ReturnType<typeof loadBindingState>>>;

export async function findPollCursor(db: Database, bindingId: string): Promise<{ uidvalidity: string | number; last_uid: string | number } | undefined> {
  return db.selectFrom('connector_poll_cursors').select(['uidvalidity', 'last_uid']).where('binding_id', '=', bindingId).executeTakeFirst();
}

/** Ledger rows, once per (connection, uidvalidity, uid). */
export async function insertConnectorEvents(trx: Database, rows: Insertable<ConnectorEventsTable>[]): Promise<void> {
  await trx.insertInto('connector_events').values(rows).onConflict((oc) => oc.columns(['connection_id', 'uidvalidity', 'uid']).doNothing()).execute();
}

export async function listConnectorEventIds(trx: Database, connectionId: string, uidvalidity: number, uids: number[]): Promise<{ id: string }[]> {
  return trx.selectFrom('connector_events').select('id')
    .where('connection_id', '=', connectionId).where('uidvalidity', '=', uidvalidity)
    .where('uid', 'in', uids).execute();
}

/** One dispatch per (event, binding); returns how many were new. */
export async function insertDispatches(trx: Database, rows: Insertable<ConnectorDispatchesTable>[]): Promise<number> {
  const inserted = await trx.insertInto('connector_dispatches')
    .values(rows)
    .onConflict((oc) => oc.columns(['event_id', 'binding_id']).doNothing()).returning('id').execute();
  return inserted.length;
}

/** Forward only within a generation; a new generation replaces it (a re-baseline). */
export async function advancePollCursor(trx: Database, bindingId: string, uidvalidity: number, lastUid: number): Promise<void> {
  await sql`
      INSERT INTO connector_poll_cursors (binding_id, uidvalidity, last_uid) VALUES (${bindingId}, ${uidvalidity}, ${lastUid})
      ON CONFLICT (binding_id) DO UPDATE SET
        last_uid = CASE WHEN connector_poll_cursors.uidvalidity = excluded.uidvalidity
          THEN greatest(connector_poll_cursors.last_uid, excluded.last_uid) ELSE excluded.last_uid END,
        uidvalidity = excluded.uidvalidity, updated_at = now()
    `.execute(trx);
}

/** The oldest `limit` pending dispatches of the binding. */
export async function listPendingDispatchIds(db: Database, bindingId: string, limit: number): Promise<{ id: string }[]> {
  return db.selectFrom('connector_dispatches').select('id')
    .where('binding_id', '=', bindingId).where('status', '=', 'pending')
    .orderBy('created_at').orderBy('id').limit(limit).execute();
}
