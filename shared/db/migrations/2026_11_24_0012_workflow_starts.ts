import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// The transactional outbox of workflow starts (shared/workflow-starts/): a request that starts a
// workflow records the intent here in the same statement or transaction as its own rows, so a
// start that Temporal never received (down, restarting, the process died) is made later by the
// worker's dispatcher instead of being lost. `workflow_id` is the deterministic Temporal id, so
// a start made twice is refused by Temporal and harmless.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('workflow_starts')
    .addColumn('workflow_id', 'text', (c) => c.primaryKey())
    .addColumn('workflow_type', 'text', (c) => c.notNull())
    .addColumn('task_queue', 'text', (c) => c.notNull())
    .addColumn('args', 'jsonb', (c) => c.notNull())
    // Keyword search attributes by name, and the Temporal UI summary: what the start sets.
    .addColumn('search_attributes', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('static_summary', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    // When the dispatcher may next try: the requester's own attempt gets a grace period first.
    .addColumn('next_attempt_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    // A dispatcher holds the row until then while its start is in flight; a requester may only
    // withdraw a row nobody holds.
    .addColumn('claimed_until', 'timestamptz')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_error', 'text')
    .execute();
  await db.schema.createIndex('workflow_starts_due_idx').on('workflow_starts').column('next_attempt_at').execute();
  // The run reconciler looks for runs that are still open: few rows, found without a scan.
  await sql`CREATE INDEX runs_open_idx ON runs (created_at) WHERE status = 'running'`.execute(db);
  // A run withdrawn before it started gives up its Idempotency-Key, found by run.
  await db.schema.createIndex('run_idempotency_keys_run_idx').on('run_idempotency_keys').column('run_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS run_idempotency_keys_run_idx`.execute(db);
  await sql`DROP INDEX IF EXISTS runs_open_idx`.execute(db);
  await db.schema.dropTable('workflow_starts').ifExists().execute();
}
