import { sql, type Insertable } from 'kysely';
import type { Database } from '../db/client.js';
import type { ConnectorBindingsTable } from '../db/types.js';

// Kysely only: the bindings (bindings.ts) and dispatch leases (dispatch.ts) of connectors.

/** A connection with its connector's triggers, under a shared lock: a revoke waits for the caller's transaction. */
export const findConnectionForShare = (db: Database, connectionId: string) =>
  db.selectFrom('connector_connections as c').innerJoin('connectors as k', 'k.service', 'c.service')
    .select(['c.id', 'c.user_id', 'c.status', 'c.service', 'k.supported_triggers'])
    .where('c.id', '=', connectionId).forShare('c').executeTakeFirst();

export const insertBinding = (db: Database, binding: Insertable<ConnectorBindingsTable>) =>
  db.insertInto('connector_bindings').values(binding).returningAll().executeTakeFirstOrThrow();

/** The enabled bindings of a document whose connection is not `active`. */
export const listInactiveBindings = (db: Database, documentId: string) =>
  db.selectFrom('connector_bindings as b').innerJoin('connector_connections as c', 'c.id', 'b.connection_id')
    .select(['b.id as bindingId', 'c.id as connectionId', 'c.status'])
    .where('b.document_id', '=', documentId).where('b.enabled', '=', true).where('c.status', '<>', 'active')
    .orderBy('b.id')
    .execute();

export const findDispatchWithDocument = (db: Database, dispatchId: string) =>
  db.selectFrom('connector_dispatches as d').innerJoin('connector_bindings as b', 'b.id', 'd.binding_id')
    .select(['d.status', 'b.document_id']).where('d.id', '=', dispatchId).executeTakeFirst();

/** A new lease on a pending dispatch (the newest token replaces the last); whether it was still pending. */
export async function leaseDispatch(
  db: Database, dispatchId: string, lease: { tokenHash: string; ttlSeconds: number; deploymentId: string | null },
): Promise<boolean> {
  const leased = await db.updateTable('connector_dispatches')
    .set({
      lease_token_hash: lease.tokenHash, lease_expires_at: sql<Date>`now() + make_interval(secs => ${lease.ttlSeconds})`,
      lease_deployment_id: lease.deploymentId, attempts: sql<number>`attempts + 1`, updated_at: sql<Date>`now()`,
    })
    .where('id', '=', dispatchId).where('status', '=', 'pending').executeTakeFirst();
  return leased.numUpdatedRows > 0n;
}

export const noteOutcomeOfPendingDispatch = (db: Database, dispatchId: string, outcome: string, drop: boolean) =>
  db.updateTable('connector_dispatches')
    .set({ last_outcome: outcome, ...(drop ? { status: 'dropped' as const } : {}), updated_at: sql<Date>`now()` })
    .where('id', '=', dispatchId).where('status', '=', 'pending').execute();

export const findDispatchByTokenHash = (db: Database, tokenHash: string) =>
  db.selectFrom('connector_dispatches')
    .select(['id', 'binding_id', 'event_id', 'status', 'lease_token_hash', 'lease_deployment_id', sql<boolean>`lease_expires_at > now()`.as('live')])
    .where('lease_token_hash', '=', tokenHash).executeTakeFirst();

export const findConnectorEvent = (db: Database, eventId: string) =>
  db.selectFrom('connector_events').selectAll().where('id', '=', eventId).executeTakeFirstOrThrow();

/** The one-time gate: of two requests with one token, one marks the dispatch and the other finds nothing. */
export async function consumeDispatchLease(db: Database, dispatchId: string, tokenHash: string): Promise<boolean> {
  const gate = await db.updateTable('connector_dispatches').set({ status: 'dispatched', updated_at: sql<Date>`now()` })
    .where('id', '=', dispatchId).where('lease_token_hash', '=', tokenHash).where('status', '=', 'pending')
    .where(sql<boolean>`lease_expires_at > now()`).executeTakeFirst();
  return gate.numUpdatedRows > 0n;
}

export const recordDispatchedRun = (db: Database, dispatchId: string, runId: string) =>
  db.updateTable('connector_dispatches').set({ run_id: runId, last_outcome: 'dispatched' }).where('id', '=', dispatchId).execute();
