import type { Database } from '../db/client.js';
import { newId } from '../ids.js';
import type { Extraction } from './extract.js';
import { insertEntities, insertEpisode, insertFacts } from './repository.js';

// Writes of Graphiti's model (episode → entities → facts), shared by hand ingestion and the
// generation build: builds the rows (ids, entities deduplicated by name) that ./repository.ts
// inserts; callers pass their transaction.

export interface EpisodeScope {
  projectId: string;
  /** Null for a hand-submitted episode: no generation, no provenance. */
  generationId: string | null;
  jobId: string | null;
  name: string;
  content: string;
  extractor: string;
  now: Date;
  /** One vector per extracted fact (same order), when an embedding model is configured; else the facts' `embedding` stays null. */
  embeddings?: number[][] | null;
}

/** A written fact and the index of the extracted fact it came from (to attach provenance). */
export interface WrittenFact { id: string; index: number }

/** Inserts the episode, its entities (deduplicated by name) and facts; returns the episode id and the facts. */
export async function writeEpisode(trx: Database, scope: EpisodeScope, extraction: Extraction): Promise<{ episodeId: string; entities: number; facts: WrittenFact[] }> {
  if (scope.embeddings && scope.embeddings.length !== extraction.facts.length) {
    throw new Error(`${scope.embeddings.length} embeddings for ${extraction.facts.length} facts`);
  }
  const episodeId = newId();
  await insertEpisode(trx, {
    id: episodeId, project_id: scope.projectId, generation_id: scope.generationId, job_id: scope.jobId,
    name: scope.name, content: scope.content, extractor: scope.extractor, created_at: scope.now,
  });

  const entityIds = new Map<string, string>();
  const entityRows = [];
  const named = [...extraction.entities, ...extraction.facts.flatMap((f) => [f.source, f.target])
    .filter((name): name is string => typeof name === 'string' && name !== '').map((name) => ({ name, kind: 'entity' }))];
  for (const entity of named) {
    if (entityIds.has(entity.name)) continue;
    const id = newId();
    entityIds.set(entity.name, id);
    entityRows.push({ id, project_id: scope.projectId, generation_id: scope.generationId, episode_id: episodeId, name: entity.name, kind: entity.kind, created_at: scope.now });
  }
  await insertEntities(trx, entityRows);

  const facts: WrittenFact[] = [];
  const factRows = extraction.facts.map((f, index) => {
    const id = newId();
    facts.push({ id, index });
    return {
      id, project_id: scope.projectId, generation_id: scope.generationId, episode_id: episodeId,
      source_entity_id: f.source ? entityIds.get(f.source) ?? null : null, target_entity_id: f.target ? entityIds.get(f.target) ?? null : null,
      relation: f.relation, fact: f.fact,
      // World time: when the text says; otherwise true from the moment we learnt it.
      valid_at: f.validAt ?? scope.now, invalid_at: f.invalidAt ?? null, created_at: scope.now, expired_at: null,
      embedding: scope.embeddings?.[index] ?? null,
    };
  });
  await insertFacts(trx, factRows);
  return { episodeId, entities: entityRows.length, facts };
}
