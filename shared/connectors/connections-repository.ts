import type { Insertable, Selectable } from 'kysely';
import type { Database } from '../db/client.js';
import type { ConnectorConnectionsTable } from '../db/types.js';

// Kysely queries only, on `connector_connections`: ownership, sealing and views live in connections.ts.

export type ConnectionRow = Selectable<ConnectorConnectionsTable>;

export async function insertConnection(db: Database, values: Insertable<ConnectorConnectionsTable>): Promise<ConnectionRow> {
  return db.insertInto('connector_connections').values(values).returningAll().executeTakeFirstOrThrow();
}

/** A user's connections, newest first. */
export async function listUserConnections(db: Database, userId: string): Promise<ConnectionRow[]> {
  return db.selectFrom('connector_connections').selectAll().where('user_id', '=', userId).orderBy('created_at', 'desc').orderBy('id').execute();
}

export async function findUserConnection(db: Database, userId: string, connectionId: string): Promise<ConnectionRow | undefined> {
  return db.selectFrom('connector_connections').selectAll().where('id', '=', connectionId).where('user_id', '=', userId).executeTakeFirst();
}

/** `revoked`, its sealed credentials dropped; a revoked row is left as it is. */
export async function markConnectionRevoked(db: Database, connectionId: string): Promise<void> {
  await db.updateTable('connector_connections')
    .set({ status: 'revoked', revoked_at: new Date(), credentials_sealed: JSON.stringify({}), updated_at: new Date() })
    .where('id', '=', connectionId).where('status', '<>', 'revoked')
    .execute();
}
