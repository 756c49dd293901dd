import { sql } from 'kysely';
import type { Database } from '../db/client.js';
import { graphErrors } from './errors.js';
import { currentSourceVersion } from './source-versions.js';

// Trusted search (spec §4.5): rank the active generation's current facts by full-text rank and
// trigram word similarity fused by reciprocal rank, then verify every candidate's provenance against
// the real source rows, all in one REPEATABLE READ snapshot. A candidate whose source changed or
// went away is dropped; no active generation is the stable 503.

export interface Evidence { sourceType: 'database' | 'file'; sourceVersionId: string; locator: Record<string, unknown> }
export interface SearchHit { uuid: string; fact: string; evidence: Evidence[] }
export interface SearchAnswer { generationId: string; results: SearchHit[] }

/**
 * Matches ranked per retriever, at most. A word that most facts contain would otherwise have every
 * one of them ranked (700 ms over 100,000 facts in the bench); such a word says little, so ranking
 * the first matches the index yields is the trade: bounded time, approximate order for it alone.
 */
const POOL = 1_000;

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

async function rankCandidates(trx: Database, generationId: string, query: string, take: number) {
  const tsquery = orQuery(query);
  const fullText = tsquery
    ? sql`SELECT m.id, row_number() OVER (ORDER BY ts_rank(m.search, m.q) DESC, m.id) AS r
        FROM (
          SELECT f.id, f.search, q.q FROM graph_facts f, to_tsquery('simple', ${tsquery}) AS q(q)
          WHERE f.generation_id = ${generationId} AND f.search @@ q.q AND ${isCurrent} LIMIT ${POOL}
        ) m
        ORDER BY ts_rank(m.search, m.q) DESC, m.id LIMIT ${take}`
    : sql`SELECT NULL::uuid AS id, 0::bigint AS r WHERE false`;
  const { rows } = await sql<{ id: string; fact: string }>`
    WITH fts AS (${fullText}),
    trgm AS (
      SELECT m.id, row_number() OVER (ORDER BY word_similarity(${query}, m.fact) DESC, m.id) AS r
      FROM (
        SELECT f.id, f.fact FROM graph_facts f
        WHERE f.generation_id = ${generationId} AND ${query} <% f.fact AND ${isCurrent} LIMIT ${POOL}
      ) m
      ORDER BY word_similarity(${query}, m.fact) DESC, m.id LIMIT ${take}
    ),
    fused AS (
      SELECT id, sum(1.0 / (${RRF_K} + r)) AS score FROM (SELECT id, r FROM fts UNION ALL SELECT id, r FROM trgm) c GROUP BY id
    )
    SELECT f.id, f.fact FROM fused JOIN graph_facts f ON f.id = fused.id ORDER BY fused.score DESC, f.id`.execute(trx);
  return rows;
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

export async function searchGraph(db: Database, input: { projectId: string; query: string; limit: number }): Promise<SearchAnswer> {
  return db.transaction().setIsolationLevel('repeatable read').setAccessMode('read only').execute(async (trx) => {
    const generation = await trx.selectFrom('graph_generations').select('id')
      .where('project_id', '=', input.projectId).where('status', '=', 'active').executeTakeFirst();
    if (!generation) throw graphErrors.noActiveGeneration();
    // More candidates than asked for, so the ones verification drops leave room for the next ones.
    const candidates = await rankCandidates(trx, generation.id, input.query, Math.max(input.limit * 3, 30));
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
