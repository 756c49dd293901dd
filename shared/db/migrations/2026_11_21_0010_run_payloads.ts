import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// Run payloads (claim check): values of a run too large for Temporal's workflow history — inputs,
// block outputs, rendered I/O requests — stored here and passed through the workflow by key
// (docs/app-runs.md "Large payloads").

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('run_payloads')
    .addColumn('run_id', 'uuid', (c) => c.notNull().references('runs.id'))
    // `input:<name>`, `output:<blockId>`, `request:<blockId>`.
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('payload', 'jsonb', (c) => c.notNull())
    // UTF-8 length of the value's JSON as the workflow would have carried it.
    .addColumn('bytes', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('run_payloads_pkey', ['run_id', 'key'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('run_payloads').execute();
}
