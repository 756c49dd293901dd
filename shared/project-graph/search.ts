import type { Database } from '../db/client.js';
import { MAX_EMBEDDED_CHARS, QUERY_EMBEDDING_TIMEOUT_MS, type Embedder } from './embeddings.js';
import { graphErrors } from './errors.js';
import { findActiveEmbeddingModel, findActiveGeneration, listProvenance, rankCandidates } from './repository.js';

// Trusted search (spec §4.5): rank the active generation's current facts by full-text rank and
// trigram word similarity (and, when its facts were embedded by the configured embedding model,
// cosine similarity over those candidates) fused by reciprocal rank, then verify every candidate's
// provenance against the real source rows, all in one REPEATABLE READ snapshot. A candidate whose
// source changed or went away is dropped; no active generation is the stable 503.

export interface Evidence { sourceType: 'database' | 'file'; sourceVersionId: string; locator: Record<string, unknown> }
export interface SearchHit { uuid: string; fact: string; evidence: Evidence[] }
export interface SearchAnswer { generationId: string; results: SearchHit[] }

/** Words of the query as a `simple` OR-tsquery: letters and digits only, so the text cannot be tsquery syntax. */
export function orQuery(query: string): string | null {
  const words = [...new Set(query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])].slice(0, 32);
  return words.length > 0 ? words.join(' | ') : null;
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
  const generation = await findActiveEmbeddingModel(db, projectId);
  if (generation?.embedding_model !== embedder.model) return null;
  try {
    const [vector] = await embedder.embed([query.slice(0, MAX_EMBEDDED_CHARS)], { timeoutMs: QUERY_EMBEDDING_TIMEOUT_MS });
    return vector ?? null;
  } catch (error) {
    options.onEmbeddingError?.(error);
    return null;
  }
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
    const generation = await findActiveGeneration(trx, input.projectId);
    if (!generation) throw graphErrors.noActiveGeneration();
    // A generation switched in since the vector was made: its facts may be another model's vectors.
    const sameModel = vector !== null && generation.embedding_model === options.embedder?.model;
    // More candidates than asked for, so the ones verification drops leave room for the next ones.
    const candidates = await rankCandidates(trx, {
      generationId: generation.id, query: input.query, tsquery: orQuery(input.query), take: Math.max(input.limit * 3, 30), vector: sameModel ? vector : null,
    });
    const factIds = candidates.map((c) => c.id);
    const provenance = factIds.length === 0 ? [] : await listProvenance(trx, input.projectId, generation.id, factIds);
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
