import { sql, type Insertable, type RawBuilder, type Selectable } from 'kysely';
import type { Database } from '../db/client.js';
import type {
  GraphArtifactsTable, GraphEntitiesTable, GraphEpisodesTable, GraphFactContributionsTable, GraphFactsTable,
  GraphGenerationsTable, GraphJobsTable, GraphSourceTable,
} from '../db/types.js';

// Kysely queries only: the graph's rows (jobs, generations, Graphiti's episode → entities → facts,
// provenance) and the search SQL. Not-found, the build's steps and the answers' shapes live in the
// modules beside this file; callers pass their transaction.

export type GraphJobRow = Selectable<GraphJobsTable>;

/**
 * Rows per INSERT: well below PostgreSQL's 65,535 parameters at ~13 columns a row (an embedding is
 * one array parameter).
 */
const BATCH = 1_000;

async function insertInBatches<T>(rows: T[], insert: (batch: T[]) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < rows.length; i += BATCH) await insert(rows.slice(i, i + BATCH));
}

// ── Source version ids ─────────────────────────────────────────────────────────────────────────────
// A uuid derived from everything of a source row a fact can quote, plus its update time (md5 as a
// version 8 uuid: `graph_version_uuid`, migration 0019). Computed by PostgreSQL with one expression
// per table, the same one when a generation records its artifacts and when search verifies them, so
// "the source changed" is exactly "this expression now gives another uuid" (or no row: deleted, or
// moved to another project).

const col = (alias: string, column: string) => sql.ref(`${alias}.${column}`);

/** A document: its name, graph and update time. */
export const documentVersion = (alias: string): RawBuilder<string> => sql<string>`graph_version_uuid(concat_ws(':', 'documents', ${col(alias, 'id')}::text,
  ${col(alias, 'name')}, ${col(alias, 'graph')}::text, (extract(epoch from ${col(alias, 'updated_at')}) * 1000000)::bigint::text))`;

/** A deployment is immutable once published: its snapshot and version. */
export const deploymentVersion = (alias: string): RawBuilder<string> => sql<string>`graph_version_uuid(concat_ws(':', 'deployments', ${col(alias, 'id')}::text,
  ${col(alias, 'version_major')}::text, ${col(alias, 'version_minor')}::text, ${col(alias, 'snapshot')}::text))`;

/** A stored file: its bytes (sha256 and size), name and type. */
export const fileVersion = (alias: string): RawBuilder<string> => sql<string>`graph_version_uuid(concat_ws(':', 'files', ${col(alias, 'id')}::text,
  ${col(alias, 'sha256')}, ${col(alias, 'size')}::text, coalesce(${col(alias, 'original_name')}, ''), ${col(alias, 'content_type')}))`;

/**
 * The current version id of artifact `a`'s source row, or null when the row is gone, soft-deleted
 * or no longer in `projectId`: one scalar subquery per table, by primary key.
 */
export function currentSourceVersion(artifactAlias: string, projectId: string): RawBuilder<string | null> {
  const table = col(artifactAlias, 'source_table');
  const id = col(artifactAlias, 'source_id');
  const live = (alias: string) => sql`${col(alias, 'id')} = ${id} AND ${col(alias, 'project_id')} = ${projectId} AND ${col(alias, 'deleted_at')} IS NULL`;
  return sql<string | null>`CASE ${table}
    WHEN ${'documents' satisfies GraphSourceTable} THEN (SELECT ${documentVersion('sd')} FROM documents sd WHERE ${live('sd')})
    WHEN ${'deployments' satisfies GraphSourceTable} THEN (SELECT ${deploymentVersion('sp')} FROM deployments sp WHERE ${live('sp')})
    WHEN ${'files' satisfies GraphSourceTable} THEN (SELECT ${fileVersion('sf')} FROM files sf WHERE ${live('sf')})
  END`;
}

// ── Jobs ───────────────────────────────────────────────────────────────────────────────────────────

export async function insertGraphJob(db: Database, values: Insertable<GraphJobsTable>): Promise<void> {
  await db.insertInto('graph_jobs').values(values).execute();
}

export async function findProjectJob(db: Database, projectId: string, jobId: string): Promise<GraphJobRow | undefined> {
  return db.selectFrom('graph_jobs').selectAll().where('id', '=', jobId).where('project_id', '=', projectId).executeTakeFirst();
}

/** queued → running (a retried activity finds it running already), then the row as it is. */
export async function startQueuedJob(db: Database, jobId: string): Promise<GraphJobRow | undefined> {
  await db.updateTable('graph_jobs').set({ status: 'running', started_at: new Date() }).where('id', '=', jobId).where('status', '=', 'queued').execute();
  return db.selectFrom('graph_jobs').selectAll().where('id', '=', jobId).executeTakeFirst();
}

export async function lockJob(trx: Database, jobId: string): Promise<Pick<GraphJobRow, 'status' | 'result'>> {
  return trx.selectFrom('graph_jobs').select(['status', 'result']).where('id', '=', jobId).forUpdate().executeTakeFirstOrThrow();
}

export async function completeJob(trx: Database, jobId: string, result: unknown): Promise<void> {
  await trx.updateTable('graph_jobs').set({ status: 'completed', result: JSON.stringify(result), error: null, finished_at: new Date() })
    .where('id', '=', jobId).execute();
}

/** A completed job stays completed. */
export async function failOpenJob(db: Database, jobId: string, error: string): Promise<void> {
  await db.updateTable('graph_jobs').set({ status: 'failed', error, finished_at: new Date() })
    .where('id', '=', jobId).where('status', 'in', ['queued', 'running']).execute();
}

// ── Episodes, entities, facts ──────────────────────────────────────────────────────────────────────

export async function insertEpisode(trx: Database, values: Insertable<GraphEpisodesTable>): Promise<void> {
  await trx.insertInto('graph_episodes').values(values).execute();
}

export async function insertEntities(trx: Database, rows: Insertable<GraphEntitiesTable>[]): Promise<void> {
  await insertInBatches(rows, (batch) => trx.insertInto('graph_entities').values(batch).execute());
}

export async function insertFacts(trx: Database, rows: Insertable<GraphFactsTable>[]): Promise<void> {
  await insertInBatches(rows, (batch) => trx.insertInto('graph_facts').values(batch).execute());
}

// ── Generations ────────────────────────────────────────────────────────────────────────────────────

export async function findActiveGenerationSummary(db: Database, projectId: string): Promise<Pick<Selectable<GraphGenerationsTable>, 'id' | 'facts' | 'activated_at'> | undefined> {
  return db.selectFrom('graph_generations').select(['id', 'facts', 'activated_at'])
    .where('project_id', '=', projectId).where('status', '=', 'active').executeTakeFirst();
}

export async function findActiveEmbeddingModel(db: Database, projectId: string): Promise<Pick<Selectable<GraphGenerationsTable>, 'embedding_model'> | undefined> {
  return db.selectFrom('graph_generations').select('embedding_model')
    .where('project_id', '=', projectId).where('status', '=', 'active').executeTakeFirst();
}

export async function findActiveGeneration(db: Database, projectId: string): Promise<Pick<Selectable<GraphGenerationsTable>, 'id' | 'embedding_model'> | undefined> {
  return db.selectFrom('graph_generations').select(['id', 'embedding_model'])
    .where('project_id', '=', projectId).where('status', '=', 'active').executeTakeFirst();
}

export async function findGenerationByBuildKey(db: Database, buildKey: string): Promise<Pick<Selectable<GraphGenerationsTable>, 'id' | 'facts'> | undefined> {
  return db.selectFrom('graph_generations').select(['id', 'facts']).where('build_key', '=', buildKey).executeTakeFirst();
}

/** One build of a project at a time: the project's row, locked; undefined when it does not exist. */
export async function lockLiveProject(trx: Database, projectId: string): Promise<{ id: string } | undefined> {
  return trx.selectFrom('projects').select('id').where('id', '=', projectId).where('deleted_at', 'is', null).forUpdate().executeTakeFirst();
}

export async function insertGeneration(trx: Database, values: Insertable<GraphGenerationsTable>): Promise<void> {
  await trx.insertInto('graph_generations').values(values).execute();
}

export async function insertArtifacts(trx: Database, rows: Insertable<GraphArtifactsTable>[]): Promise<void> {
  await insertInBatches(rows, (batch) => trx.insertInto('graph_artifacts').values(batch).execute());
}

export async function insertFactContributions(trx: Database, rows: Insertable<GraphFactContributionsTable>[]): Promise<void> {
  await insertInBatches(rows, (batch) => trx.insertInto('graph_fact_contributions').values(batch).execute());
}

export async function setGenerationCounts(trx: Database, generationId: string, counts: { sources: number; facts: number }): Promise<void> {
  await trx.updateTable('graph_generations').set(counts).where('id', '=', generationId).execute();
}

/** Retires the project's active generation(s); returns their ids. */
export async function retireActiveGenerations(trx: Database, projectId: string, now: Date): Promise<{ id: string }[]> {
  return trx.updateTable('graph_generations').set({ status: 'retired', retired_at: now })
    .where('project_id', '=', projectId).where('status', '=', 'active').returning('id').execute();
}

/** System time: the facts of those generations are no longer what we believe. */
export async function expireGenerationFacts(trx: Database, generationIds: string[], now: Date): Promise<void> {
  await trx.updateTable('graph_facts').set({ expired_at: now })
    .where('generation_id', 'in', generationIds).where('expired_at', 'is', null).execute();
}

export async function markGenerationActive(trx: Database, generationId: string, now: Date): Promise<void> {
  await trx.updateTable('graph_generations').set({ status: 'active', activated_at: now }).where('id', '=', generationId).execute();
}

// ── Sources of a generation, with their version ids ────────────────────────────────────────────────

export async function listDocumentSources(db: Database, projectId: string) {
  return db.selectFrom('documents as d').select(['d.id', 'd.name', 'd.graph', documentVersion('d').as('version_id')])
    .where('d.project_id', '=', projectId).where('d.deleted_at', 'is', null).orderBy('d.created_at').execute();
}

export async function listDeploymentSources(db: Database, projectId: string) {
  return db.selectFrom('deployments as p').innerJoin('documents as d', 'd.id', 'p.document_id')
    .select(['p.id', 'p.document_id', 'p.version_major', 'p.version_minor', 'p.visibility', 'p.snapshot', 'd.name', deploymentVersion('p').as('version_id')])
    .where('p.project_id', '=', projectId).where('p.deleted_at', 'is', null).orderBy('p.created_at').execute();
}

export async function listFileSources(db: Database, projectId: string) {
  return db.selectFrom('files as f')
    .select(['f.id', 'f.original_name', 'f.content_type', 'f.size', 'f.sha256', 'f.storage_key', fileVersion('f').as('version_id')])
    .where('f.project_id', '=', projectId).where('f.deleted_at', 'is', null).orderBy('f.created_at').execute();
}

// ── Search ─────────────────────────────────────────────────────────────────────────────────────────

/**
 * Matches ranked per retriever, at most. A word that most facts contain would otherwise have every
 * one of them ranked (700 ms over 100,000 facts in the bench); such a word says little, so ranking
 * the first matches the index yields is the trade: bounded time, approximate order for it alone.
 */
const POOL = 1_000;

/**
 * Rows of each text list the vectors re-rank. Cosine in SQL over `real[]` costs about 0.25 ms a row
 * at 1536 dimensions here (no pgvector): 2 × 100 rows keep a query near 50 ms even then, where the
 * whole pools (2 × POOL) took 0.5 s.
 */
const VECTOR_RERANK = 100;

/** Reciprocal rank fusion's constant (Cormack et al.): dampens the weight of the very first ranks. */
const RRF_K = 60;

/**
 * "Current" as an explicit predicate (Graphiti does not filter superseded facts by default): true in
 * the world now (`valid_at` ≤ now < `invalid_at`) and not expired in our own records.
 */
const isCurrent = sql`f.valid_at <= now() AND (f.invalid_at IS NULL OR f.invalid_at > now()) AND f.expired_at IS NULL`;

/**
 * Candidates ranked by up to three retrievers fused by reciprocal rank: full-text rank (over
 * `tsquery`, a `simple` OR-tsquery, when there is one) and trigram word similarity, each over a pool
 * of at most POOL matches, and, with a query `vector`, cosine similarity (`graph_cosine`, migration
 * 0020) over the best VECTOR_RERANK of each of those two pools only: never a scan of every fact's
 * vector. A fact without a vector (or of another length) is not ranked by that list and keeps its
 * text ranks.
 */
export async function rankCandidates(
  trx: Database, input: { generationId: string; query: string; tsquery: string | null; take: number; vector: number[] | null },
): Promise<{ id: string; fact: string }[]> {
  const { generationId, query, tsquery, take, vector } = input;
  const fullTextPool = tsquery
    ? sql`SELECT f.id, ts_rank(f.search, q.q) AS rank FROM graph_facts f, to_tsquery('simple', ${tsquery}) AS q(q)
        WHERE f.generation_id = ${generationId} AND f.search @@ q.q AND ${isCurrent} LIMIT ${POOL}`
    : sql`SELECT NULL::uuid AS id, 0::real AS rank WHERE false`;
  const vectorList = vector
    ? sql`SELECT v.id, row_number() OVER (ORDER BY v.sim DESC, v.id) AS r
        FROM (
          SELECT f.id, graph_cosine(f.embedding, ${vector}::real[]) AS sim
          FROM (
            (SELECT id FROM fts_pool ORDER BY rank DESC, id LIMIT ${VECTOR_RERANK})
            UNION (SELECT id FROM trgm_pool ORDER BY word_similarity(${query}, fact) DESC, id LIMIT ${VECTOR_RERANK})
          ) p JOIN graph_facts f ON f.id = p.id
        ) v
        WHERE v.sim IS NOT NULL ORDER BY v.sim DESC, v.id LIMIT ${take}`
    : sql`SELECT NULL::uuid AS id, 0::bigint AS r WHERE false`;
  const { rows } = await sql<{ id: string; fact: string }>`
    WITH fts_pool AS (${fullTextPool}),
    fts AS (SELECT id, row_number() OVER (ORDER BY rank DESC, id) AS r FROM fts_pool ORDER BY rank DESC, id LIMIT ${take}),
    trgm_pool AS (
      SELECT f.id, f.fact FROM graph_facts f
      WHERE f.generation_id = ${generationId} AND ${query} <% f.fact AND ${isCurrent} LIMIT ${POOL}
    ),
    trgm AS (
      SELECT id, row_number() OVER (ORDER BY word_similarity(${query}, fact) DESC, id) AS r
      FROM trgm_pool ORDER BY word_similarity(${query}, fact) DESC, id LIMIT ${take}
    ),
    vec AS (${vectorList}),
    fused AS (
      SELECT id, sum(1.0 / (${RRF_K} + r)) AS score
      FROM (SELECT id, r FROM fts UNION ALL SELECT id, r FROM trgm UNION ALL SELECT id, r FROM vec) c GROUP BY id
    )
    SELECT f.id, f.fact FROM fused JOIN graph_facts f ON f.id = fused.id ORDER BY fused.score DESC, f.id`.execute(trx);
  return rows;
}

export interface ProvenanceRow {
  fact_id: string;
  source_type: 'database' | 'file';
  source_version_id: string;
  locator: Record<string, unknown>;
  current: boolean;
}

/** Every contribution of the facts, with whether its artifact's source row is still that version. */
export async function listProvenance(trx: Database, projectId: string, generationId: string, factIds: string[]): Promise<ProvenanceRow[]> {
  const { rows } = await sql<ProvenanceRow>`
    SELECT c.fact_id, a.source_type, a.source_version_id, a.locator,
      coalesce(${currentSourceVersion('a', projectId)} = a.source_version_id, false) AS current
    FROM graph_fact_contributions c JOIN graph_artifacts a ON a.id = c.artifact_id
    WHERE c.fact_id = ANY(${factIds}::uuid[]) AND a.generation_id = ${generationId}
    ORDER BY c.fact_id, a.source_table, a.source_id`.execute(trx);
  return rows;
}
