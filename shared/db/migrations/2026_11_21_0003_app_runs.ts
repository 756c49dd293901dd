import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// Documents (editable graphs), deployments (immutable published snapshots), runs and their event log.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('documents')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('project_id', 'uuid', (c) => c.notNull().references('projects.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('graph', 'jsonb', (c) => c.notNull())
    .addColumn('created_by', 'uuid', (c) => c.references('users.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('deleted_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('documents_project_idx').on('documents').column('project_id').execute();

  await db.schema
    .createTable('deployments')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('document_id', 'uuid', (c) => c.notNull().references('documents.id'))
    .addColumn('project_id', 'uuid', (c) => c.notNull().references('projects.id'))
    .addColumn('team_id', 'uuid', (c) => c.notNull().references('teams.id'))
    .addColumn('version_major', 'integer', (c) => c.notNull())
    .addColumn('version_minor', 'integer', (c) => c.notNull())
    .addColumn('visibility', 'text', (c) => c.notNull().defaultTo('private').check(sql`visibility IN ('private', 'public')`))
    // The graph as published (immutable) and the input schema derived from it at publish time.
    .addColumn('snapshot', 'jsonb', (c) => c.notNull())
    .addColumn('api_schema', 'jsonb', (c) => c.notNull())
    .addColumn('published_by', 'uuid', (c) => c.references('users.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('deleted_at', 'timestamptz')
    .addUniqueConstraint('deployments_document_version_key', ['document_id', 'version_major', 'version_minor'])
    .execute();

  await db.schema
    .createTable('runs')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('deployment_id', 'uuid', (c) => c.notNull().references('deployments.id'))
    .addColumn('document_id', 'uuid', (c) => c.notNull().references('documents.id'))
    .addColumn('team_id', 'uuid', (c) => c.notNull().references('teams.id'))
    // Who started it: api-key / schedule / oauth / webhook, with the id of that credential.
    .addColumn('trigger_source', 'text', (c) => c.notNull())
    .addColumn('api_key_id', 'uuid', (c) => c.references('api_keys.id'))
    .addColumn('user_id', 'uuid', (c) => c.references('users.id'))
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('running')
      .check(sql`status IN ('running', 'completed', 'failed', 'cancelled', 'timed_out')`))
    .addColumn('inputs', 'jsonb', (c) => c.notNull())
    .addColumn('result', 'jsonb')
    .addColumn('error', 'text')
    .addColumn('timeout_seconds', 'integer')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('finished_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('runs_deployment_idx').on('runs').columns(['deployment_id', 'created_at']).execute();
  await db.schema.createIndex('runs_team_idx').on('runs').columns(['team_id', 'created_at']).execute();

  // Append-only event log; the id orders events and is the SSE `id:` a client resumes from.
  await db.schema
    .createTable('run_events')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('run_id', 'uuid', (c) => c.notNull().references('runs.id'))
    // Idempotency: an activity retried after a crash re-appends the same keys, which are ignored.
    .addColumn('event_key', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('payload', 'jsonb', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('run_events_run_key', ['run_id', 'event_key'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['run_events', 'runs', 'deployments', 'documents']) await db.schema.dropTable(table).ifExists().execute();
}
