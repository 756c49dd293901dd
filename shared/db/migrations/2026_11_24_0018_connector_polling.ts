import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// Connector polling and dispatch (docs/connectors.md "Polling", "Dispatch"):
// - `connector_poll_cursors`: per binding, the mailbox generation (UIDVALIDITY) and the last UID
//   seen; a binding's first poll (or a new UIDVALIDITY) sets it to the mailbox's current end.
// - `connector_events`: the ledger, one row per mail of a connection, ever (unique on connection +
//   uidvalidity + uid), with the content a run gets; the dispatch endpoint reads only this.
// - `connector_dispatches`: one per (event, binding): its 60-second lease (the token's hash), the
//   deployment it was issued for, and the run it became. `dispatched` is the one-time gate.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createTable('connector_poll_cursors')
    .addColumn('binding_id', 'uuid', (c) => c.primaryKey().references('connector_bindings.id').onDelete('cascade'))
    .addColumn('uidvalidity', 'bigint', (c) => c.notNull())
    .addColumn('last_uid', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema.createTable('connector_events')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('connection_id', 'uuid', (c) => c.notNull().references('connector_connections.id'))
    .addColumn('uidvalidity', 'bigint', (c) => c.notNull())
    .addColumn('uid', 'bigint', (c) => c.notNull())
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('from_header', 'text', (c) => c.notNull())
    .addColumn('to_header', 'text', (c) => c.notNull())
    .addColumn('sent_at', 'text', (c) => c.notNull())
    .addColumn('text_body', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('connector_events_connection_mail_key', ['connection_id', 'uidvalidity', 'uid'])
    .execute();

  await db.schema.createTable('connector_dispatches')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('event_id', 'uuid', (c) => c.notNull().references('connector_events.id'))
    .addColumn('binding_id', 'uuid', (c) => c.notNull().references('connector_bindings.id'))
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('pending').check(sql`status IN ('pending', 'dispatched', 'dropped')`))
    // sha256 of the current token; a new lease replaces it, so an older token stops working.
    .addColumn('lease_token_hash', 'text')
    .addColumn('lease_expires_at', 'timestamptz')
    // The document's live deployment when the token was issued: a republish since → 409.
    .addColumn('lease_deployment_id', 'uuid')
    .addColumn('run_id', 'uuid', (c) => c.references('runs.id'))
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_outcome', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('connector_dispatches_event_binding_key', ['event_id', 'binding_id'])
    .execute();
  await sql`CREATE UNIQUE INDEX connector_dispatches_lease_idx ON connector_dispatches (lease_token_hash) WHERE lease_token_hash IS NOT NULL`.execute(db);
  await sql`CREATE INDEX connector_dispatches_pending_idx ON connector_dispatches (binding_id, created_at) WHERE status = 'pending'`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('connector_dispatches').ifExists().execute();
  await db.schema.dropTable('connector_events').ifExists().execute();
  await db.schema.dropTable('connector_poll_cursors').ifExists().execute();
}
