import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// `Idempotency-Key` on run endpoints: a repeat within 24 h returns the same run.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('run_idempotency_keys')
    // Scoped to the caller (`api-key:<id>`, `oauth:<user>`, `schedule:<id>`), so keys never collide across callers.
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('run_id', 'uuid', (c) => c.notNull().references('runs.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('run_idempotency_keys_pkey', ['scope', 'key'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('run_idempotency_keys').ifExists().execute();
}
