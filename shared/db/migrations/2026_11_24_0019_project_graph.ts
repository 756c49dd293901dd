import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// Project graph memory (docs/project-graph.md, spec §4.5):
// - `graph_jobs`: episode ingestions (and builds) the API accepted; the job row and its workflow
//   start commit in one transaction (outbox), so an accepted job is never lost.
// - `graph_generations`: memory built from a project's authoritative sources; exactly one `active`
//   per project (partial unique index), switched in one transaction.
// - `graph_episodes`, `graph_entities`, `graph_facts`: Graphiti's model. Facts carry world time
//   (`valid_at`, `invalid_at`) and system time (`created_at`, `expired_at`); hand-submitted episodes
//   have no generation and no provenance.
// - `graph_artifacts`, `graph_fact_contributions`: provenance. An artifact is one source row as the
//   generation read it (its source version id); a contribution ties a fact to the artifacts it came from.

export async function up(db: Kysely<unknown>): Promise<void> {
  // Trusted extension (PostgreSQL 13+): the migration user needs no superuser rights.
  await sql`CREATE EXTENSION IF NOT EXISTS pg_trgm`.execute(db);
  // Source version ids (shared/project-graph/source-versions.ts): the md5 of a row's content as an
  // RFC 9562 version 8 ("custom") uuid, so the ids are valid uuids for every client that checks.
  await sql`
    CREATE FUNCTION graph_version_uuid(content text) RETURNS uuid LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
      SELECT overlay(overlay(h placing '8' from 13) placing substr('89ab', (('x' || substr(h, 17, 1))::bit(4)::int & 3) + 1, 1) from 17)::uuid
      FROM md5(content) AS h
    $$`.execute(db);

  await db.schema.createTable('graph_jobs')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('project_id', 'uuid', (c) => c.notNull().references('projects.id'))
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind IN ('ingest', 'build')`))
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('queued').check(sql`status IN ('queued', 'running', 'completed', 'failed')`))
    .addColumn('input', 'jsonb', (c) => c.notNull())
    .addColumn('result', 'jsonb')
    .addColumn('error', 'text')
    .addColumn('created_by', 'uuid', (c) => c.references('users.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('started_at', 'timestamptz')
    .addColumn('finished_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('graph_jobs_project_idx').on('graph_jobs').columns(['project_id', 'created_at']).execute();

  await db.schema.createTable('graph_generations')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('project_id', 'uuid', (c) => c.notNull().references('projects.id'))
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('building').check(sql`status IN ('building', 'active', 'retired')`))
    // Who asked for it (`cli:<id>`, `<workflow id>/<run id>`): a retried build finds its own generation.
    .addColumn('build_key', 'text', (c) => c.notNull().unique())
    .addColumn('sources', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('facts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('activated_at', 'timestamptz')
    .addColumn('retired_at', 'timestamptz')
    .execute();
  await sql`CREATE UNIQUE INDEX graph_generations_one_active ON graph_generations (project_id) WHERE status = 'active'`.execute(db);

  await db.schema.createTable('graph_episodes')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('project_id', 'uuid', (c) => c.notNull().references('projects.id'))
    // Null for a hand-submitted episode: it belongs to no generation and never reaches search.
    .addColumn('generation_id', 'uuid', (c) => c.references('graph_generations.id').onDelete('cascade'))
    // The ingestion job that wrote it: a retried activity finds its episode instead of writing a second.
    .addColumn('job_id', 'uuid', (c) => c.unique().references('graph_jobs.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('extractor', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('graph_episodes_generation_idx').on('graph_episodes').column('generation_id').execute();

  await db.schema.createTable('graph_entities')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('project_id', 'uuid', (c) => c.notNull().references('projects.id'))
    .addColumn('generation_id', 'uuid', (c) => c.references('graph_generations.id').onDelete('cascade'))
    .addColumn('episode_id', 'uuid', (c) => c.notNull().references('graph_episodes.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('graph_entities_episode_idx').on('graph_entities').column('episode_id').execute();

  await db.schema.createTable('graph_facts')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('project_id', 'uuid', (c) => c.notNull().references('projects.id'))
    .addColumn('generation_id', 'uuid', (c) => c.references('graph_generations.id').onDelete('cascade'))
    .addColumn('episode_id', 'uuid', (c) => c.notNull().references('graph_episodes.id').onDelete('cascade'))
    .addColumn('source_entity_id', 'uuid', (c) => c.references('graph_entities.id').onDelete('cascade'))
    .addColumn('target_entity_id', 'uuid', (c) => c.references('graph_entities.id').onDelete('cascade'))
    .addColumn('relation', 'text', (c) => c.notNull())
    .addColumn('fact', 'text', (c) => c.notNull())
    // 'simple': no stemming or stop words, so any language's words match as written.
    .addColumn('search', sql`tsvector`, (c) => c.generatedAlwaysAs(sql`to_tsvector('simple', fact)`).stored())
    .addColumn('valid_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('invalid_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expired_at', 'timestamptz')
    // Left null unless an embedding model is configured; pgvector is not available here.
    .addColumn('embedding', sql`real[]`)
    .execute();
  await db.schema.createIndex('graph_facts_generation_idx').on('graph_facts').column('generation_id').execute();
  await db.schema.createIndex('graph_facts_episode_idx').on('graph_facts').column('episode_id').execute();
  await sql`CREATE INDEX graph_facts_search_idx ON graph_facts USING gin (search)`.execute(db);
  await sql`CREATE INDEX graph_facts_trgm_idx ON graph_facts USING gin (fact gin_trgm_ops)`.execute(db);

  await db.schema.createTable('graph_artifacts')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('generation_id', 'uuid', (c) => c.notNull().references('graph_generations.id').onDelete('cascade'))
    .addColumn('source_type', 'text', (c) => c.notNull().check(sql`source_type IN ('database', 'file')`))
    .addColumn('source_table', 'text', (c) => c.notNull().check(sql`source_table IN ('documents', 'deployments', 'files')`))
    .addColumn('source_id', 'uuid', (c) => c.notNull())
    // A uuid derived from the row's content (shared/project-graph/source-versions.ts): any change changes it.
    .addColumn('source_version_id', 'uuid', (c) => c.notNull())
    .addColumn('locator', 'jsonb', (c) => c.notNull())
    .addUniqueConstraint('graph_artifacts_generation_source_key', ['generation_id', 'source_table', 'source_id'])
    .execute();

  await db.schema.createTable('graph_fact_contributions')
    .addColumn('fact_id', 'uuid', (c) => c.notNull().references('graph_facts.id').onDelete('cascade'))
    .addColumn('artifact_id', 'uuid', (c) => c.notNull().references('graph_artifacts.id').onDelete('cascade'))
    // What of the source the fact quotes (`name_and_blocks`, `snapshot`, `file`).
    .addColumn('contribution', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('graph_fact_contributions_pkey', ['fact_id', 'artifact_id'])
    .execute();
  await db.schema.createIndex('graph_fact_contributions_artifact_idx').on('graph_fact_contributions').column('artifact_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['graph_fact_contributions', 'graph_artifacts', 'graph_facts', 'graph_entities', 'graph_episodes', 'graph_generations', 'graph_jobs']) {
    await db.schema.dropTable(table).ifExists().execute();
  }
  await sql`DROP FUNCTION IF EXISTS graph_version_uuid(text)`.execute(db);
}
