import { sql } from 'kysely';
import type { Database } from '../db/client.js';
import { MAX_EMBEDDED_CHARS, QUERY_EMBEDDING_TIMEOUT_MS, type Embedder } from './embeddings.js';
import { graphErrors } from './errors.js';
import { currentSourceVersion } from './source-versions.js';

// Trusted search (spec §4.5): rank the active generation's current facts by full-text rank and
// trigram word similarity (and, when its facts were embedded by the configured embedding model,
// cosine similarity over those candidates) fused by reciprocal rank, then verify every candidate's
// provenance against the real source rows, all in one REPEATABLE READ snapshot. A candidate whose
// source changed or went away is dropped; no active generation is the stable 503.

export interface Evidence { sourceType: 'database' | 'file'; sourceVersionId: string; locator: Record<string, unknown> }
export interface SearchHit { uuid: string; fact: string; evidence: Evidence[] }
export interface SearchAnswer { generationId: string; results: SearchHit[] }

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

/** Words of the query as a `simple` OR-tsquery: letters and digits only, so the text cannot be tsquery syntax. */
export function orQuery(query: string): string | null {
  const words = [...new Set(query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])].slice(0, 32);
  return words.length > 0 ? words.join(' | ') : null;
}

/**
 * "Current" as an explicit predicate (Graphiti does not filter superseded facts by default): true in
 * the world now (`valid_at` ≤ now < `invalid_at`) and not expired in our own records.
 */
const isCurrent = sql`f.valid_at <= now() AND (f.invalid_at IS NULL OR f.invalid_at > now()) AND f.expired_at IS NULL`;

/**
 * Candidates ranked by up to three retrievers fused by reciprocal rank: full-text rank and trigram
 * word similarity, each over a pool of at most POOL matches, and, with a query `vector`, cosine
 * similarity (`graph_cosine`, migration 0020) over the best VECTOR_RERANK of each of those two pools
 * only: never a scan of every fact's vector. A fact without a vector (or of another
 * length) is not ranked by that list and keeps its text ranks.
 */
async function rankCandidates(trx: Database, generationId: string, query: string, take: number, vector: number[] | null) {
  const tsquery = orQuery(query);
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

/**
 * The query's vector when the active generation's facts were embedded by the configured model, or
 * null (no embedder, no embedded generation, another model, or the provider failing: search then
 * ranks by text only, and says so through `onEmbeddingError`). Read before the search's snapshot,
 * so no provider call holds it open; the snapshot checks the model again.
 */
async function queryVector(db: Database, projectId: string, query: string, options: SearchOptions): Promise<number[] | null> {
  const embedder = options.embedder;
  if (!embedder) return null;
  const generation = await db.selectFrom('graph_generations').select('embedding_model')
    .where('project_id', '=', projectId).where('status', '=', 'active').executeTakeFirst();
  if (generation?.embedding_model !== embedder.model) return null;
  try {
    const [vector] = await embedder.embed([query.slice(0, MAX_EMBEDDED_CHARS)], { timeoutMs: QUERY_EMBEDDING_TIMEOUT_MS });
    return vector ?? null;
  } catch (error) {
    options.onEmbeddingError?.(error);
    return null;
  }
}

/** Every contribution of the candidates, with whether its artifact's source row is still that version. */
async function provenanceOf(trx: Database, projectId: string, generationId: string, factIds: string[]) {
  if (factIds.length === 0) return [];
  const { rows } = await sql<{ fact_id: string; source_type: 'database' | 'file'; source_version_id: string; locator: Record<string, unknown>; current: boolean }>`
    SELECT c.fact_id, a.source_type, a.source_version_id, a.locator,
      coalesce(${currentSourceVersion('a', projectId)} = a.source_version_id, false) AS current
    FROM graph_fact_contributions c JOIN graph_artifacts a ON a.id = c.artifact_id
    WHERE c.fact_id = ANY(${factIds}::uuid[]) AND a.generation_id = ${generationId}
    ORDER BY c.fact_id, a.source_table, a.source_id`.execute(trx);
  return rows;
}

export interface SearchOptions {
  /** graph.config `embeddingModel` (graphEmbedder): adds the vector list when the active generation was embedded by it. */
  embedder?: Embedder | null;
  /** The query could not be embedded: search answers from the text retrievers; the caller logs this. */
  onEmbeddingError?: (error: unknown) => void;
}

export async function searchGraph(db: Database, input: { projectId: string; query: string; limit: number }, options: SearchOptions = {}): Promise<SearchAnswer> {
  const vector = await queryVector(db, input.projectId, input.query, options);
  return db.transaction().setIsolationLevel('repeatable read').setAccessMode('read only').execute(async (trx) => {
    const generation = await trx.selectFrom('graph_generations').select(['id', 'embedding_model'])
      .where('project_id', '=', input.projectId).where('status', '=', 'active').executeTakeFirst();
    if (!generation) throw graphErrors.noActiveGeneration();
    // A generation switched in since the vector was made: its facts may be another model's vectors.
    const sameModel = vector !== null && generation.embedding_model === options.embedder?.model;
    // More candidates than asked for, so the ones verification drops leave room for the next ones.
    const candidates = await rankCandidates(trx, generation.id, input.query, Math.max(input.limit * 3, 30), sameModel ? vector : null);
    const provenance = await provenanceOf(trx, input.projectId, generation.id, candidates.map((c) => c.id));
    const evidence = new Map<string, { ok: boolean; items: Evidence[] }>();
    for (const row of provenance) {
      const entry = evidence.get(row.fact_id) ?? { ok: true, items: [] };
      entry.ok &&= row.current;
      entry.items.push({ sourceType: row.source_type, sourceVersionId: row.source_version_id, locator: row.locator });
      evidence.set(row.fact_id, entry);
    }
    // A fact without provenance, or with one source that no longer matches, is not trusted.
    const results = candidates.flatMap((c) => {
      const entry = evidence.get(c.id);
      return entry?.ok ? [{ uuid: c.id, fact: c.fact, evidence: entry.items }] : [];
    });
    return { generationId: generation.id, results: results.slice(0, input.limit) };
  });
}
