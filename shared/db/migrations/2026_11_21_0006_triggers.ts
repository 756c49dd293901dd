import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// Webhook triggers (one per document) and cron schedules with their logs.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('webhook_triggers')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('document_id', 'uuid', (c) => c.notNull().unique().references('documents.id'))
    .addColumn('project_id', 'uuid', (c) => c.notNull().references('projects.id'))
    // The team that pays for calls; re-set on every publish. Null means "republish" (spec §7.3 403).
    .addColumn('team_id', 'uuid', (c) => c.references('teams.id'))
    // The newest deployment of the document; every publish re-points it (spec §3.6).
    .addColumn('deployment_id', 'uuid', (c) => c.references('deployments.id'))
    .addColumn('enabled', 'boolean', (c) => c.notNull().defaultTo(true))
    // sha256 of the `wht_…` secret (hex); the plaintext is shown once and never stored.
    .addColumn('secret_hash', 'text')
    .addColumn('secret_prefix', 'text')
    .addColumn('last_triggered_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  // Documents published before triggers existed get theirs, pointing at their newest deployment.
  await sql`
    INSERT INTO webhook_triggers (id, document_id, project_id, team_id, deployment_id)
    SELECT DISTINCT ON (d.document_id) gen_random_uuid(), d.document_id, d.project_id, d.team_id, d.id
    FROM deployments d WHERE d.deleted_at IS NULL
    ORDER BY d.document_id, d.created_at DESC`.execute(db);

  await db.schema
    .createTable('schedules')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('project_id', 'uuid', (c) => c.notNull().references('projects.id'))
    .addColumn('team_id', 'uuid', (c) => c.notNull().references('teams.id'))
    .addColumn('deployment_id', 'uuid', (c) => c.references('deployments.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('cron_expression', 'text', (c) => c.notNull())
    .addColumn('timezone', 'text', (c) => c.notNull().defaultTo('UTC'))
    .addColumn('trigger_config', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('enabled', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('timeout_ms', 'integer', (c) => c.notNull())
    .addColumn('max_retries', 'integer', (c) => c.notNull().defaultTo(3))
    .addColumn('created_by', 'uuid', (c) => c.references('users.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('deleted_at', 'timestamptz')
    .execute();
  // Names are unique among the project's live schedules; a deleted one frees its name.
  await sql`CREATE UNIQUE INDEX schedules_project_name_key ON schedules (project_id, name) WHERE deleted_at IS NULL`.execute(db);
  await sql`CREATE INDEX schedules_team_enabled_idx ON schedules (team_id) WHERE deleted_at IS NULL AND enabled`.execute(db);
  await db.schema.createIndex('schedules_project_created_idx').on('schedules').columns(['project_id', 'created_at']).execute();

  await db.schema
    .createTable('schedule_logs')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('schedule_id', 'uuid', (c) => c.notNull().references('schedules.id'))
    .addColumn('project_id', 'uuid', (c) => c.notNull().references('projects.id'))
    .addColumn('run_id', 'uuid', (c) => c.references('runs.id'))
    .addColumn('status', 'text', (c) => c.notNull())
    // When Temporal meant to fire (null for a manual trigger); started_at minus this is the firing delay.
    .addColumn('scheduled_at', 'timestamptz')
    .addColumn('started_at', 'timestamptz', (c) => c.notNull())
    .addColumn('finished_at', 'timestamptz')
    .addColumn('error', 'text')
    .addColumn('result', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .execute();
  await db.schema.createIndex('schedule_logs_schedule_started_idx').on('schedule_logs').columns(['schedule_id', 'started_at']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('schedule_logs').execute();
  await db.schema.dropTable('schedules').execute();
  await db.schema.dropTable('webhook_triggers').execute();
}
