import type { Database } from '../db/client.js';
import type { GraphSourceTable } from '../db/types.js';
import { newId } from '../ids.js';
import type { FileStore } from '../storage/file-store.js';
import { embedFacts, type Embedder } from './embeddings.js';
import { describeDeployment, describeDocument, describeFile, type ExtractedFact } from './extract.js';
import type { GraphBuildResult } from './contracts.js';
import {
  expireGenerationFacts, findGenerationByBuildKey, insertArtifacts, insertFactContributions, insertGeneration, listDeploymentSources,
  listDocumentSources, listFileSources, lockLiveProject, markGenerationActive, retireActiveGenerations, setGenerationCounts,
} from './repository.js';
import { writeEpisode } from './store.js';

// A memory generation: every authoritative source of a project (documents, live deployments, stored
// files) read once with its source version id, turned into facts by the built-in extractor, each
// fact tied to its source by an artifact and a contribution, then switched in as the project's one
// active generation in the same transaction that retires the previous one (docs/project-graph.md).

/** Text files up to this size are quoted in their fact; larger ones by name, type and size only. */
const MAX_QUOTED_FILE_BYTES = 64 * 1024;
const TEXT_TYPES = /^(text\/|application\/(json|xml|yaml|x-yaml|markdown))/;

interface Source {
  table: GraphSourceTable;
  sourceType: 'database' | 'file';
  id: string;
  versionId: string;
  locator: Record<string, unknown>;
  contribution: string;
  fact: ExtractedFact;
}

async function readDocuments(db: Database, projectId: string): Promise<Source[]> {
  const rows = await listDocumentSources(db, projectId);
  return rows.map((row) => ({
    table: 'documents', sourceType: 'database', id: row.id, versionId: row.version_id,
    locator: { table: 'documents', id: row.id, name: row.name }, contribution: 'name_and_blocks', fact: describeDocument(row.name, row.graph),
  }));
}

async function readDeployments(db: Database, projectId: string): Promise<Source[]> {
  const rows = await listDeploymentSources(db, projectId);
  return rows.map((row) => {
    const version = `${row.version_major}.${row.version_minor}`;
    return {
      table: 'deployments', sourceType: 'database', id: row.id, versionId: row.version_id,
      locator: { table: 'deployments', id: row.id, documentId: row.document_id, version }, contribution: 'snapshot',
      fact: describeDeployment(row.name, version, row.visibility, row.snapshot),
    };
  });
}

async function readFiles(db: Database, store: FileStore | null, projectId: string): Promise<Source[]> {
  const rows = await listFileSources(db, projectId);
  const sources: Source[] = [];
  for (const row of rows) {
    const name = row.original_name ?? row.id;
    const text = store && row.size <= MAX_QUOTED_FILE_BYTES && TEXT_TYPES.test(row.content_type) ? await readText(store, row.storage_key) : null;
    sources.push({
      table: 'files', sourceType: 'file', id: row.id, versionId: row.version_id,
      locator: { fileId: row.id, name, sha256: row.sha256 }, contribution: 'file', fact: describeFile(name, row.content_type, row.size, text),
    });
  }
  return sources;
}

/** The file's text, or null when its bytes are missing from the store (its fact then names it only). */
async function readText(store: FileStore, key: string): Promise<string | null> {
  try {
    const chunks: Buffer[] = [];
    for await (const chunk of await store.get(key)) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  } catch {
    return null;
  }
}

/**
 * Builds and activates a generation. `buildKey` names the request (`cli:<uuid>`, a workflow run):
 * asked twice (a retried activity), the second call returns the generation the first one built.
 * With an `embedder` (graph.config `embeddingModel`), every fact is embedded before anything is
 * written; a failing embeddings call fails the build (an `LlmError` naming the model) and the
 * previous generation stays active.
 */
export async function buildGeneration(
  db: Database, input: { projectId: string; buildKey: string; store: FileStore | null; embedder?: Embedder | null; signal?: AbortSignal },
): Promise<GraphBuildResult> {
  const existing = await findBuild(db, input.buildKey);
  if (existing) return existing;
  // Read outside the write transaction: a source that changes meanwhile keeps the version read here,
  // and search drops its facts as changed, which is the truth.
  const sources = [
    ...(await readDocuments(db, input.projectId)),
    ...(await readDeployments(db, input.projectId)),
    ...(await readFiles(db, input.store, input.projectId)),
  ];
  // Outside the transaction too: a provider call must not hold the project's lock.
  const embedder = input.embedder ?? null;
  const embeddings = await embedFacts(embedder, sources.map((s) => s.fact), input.signal);
  return db.transaction().execute(async (trx) => {
    // One build of a project at a time: the later one becomes the active generation.
    const project = await lockLiveProject(trx, input.projectId);
    if (!project) throw new Error(`Project ${input.projectId} does not exist`);
    const again = await findBuild(trx, input.buildKey);
    if (again) return again;
    const now = new Date();
    const generationId = newId();
    await insertGeneration(trx, {
      id: generationId, project_id: input.projectId, build_key: input.buildKey, status: 'building', created_at: now,
      embedding_model: embeddings && embedder ? embedder.model : null,
    });
    const written = await writeEpisode(trx, {
      projectId: input.projectId, generationId, jobId: null, name: `Memory generation ${generationId}`,
      content: sources.map((s) => `${s.table}/${s.id}@${s.versionId}`).join('\n'), extractor: 'builtin', now, embeddings,
    }, { entities: [], facts: sources.map((s) => s.fact) });

    const artifacts = sources.map((s) => ({
      id: newId(), generation_id: generationId, source_type: s.sourceType, source_table: s.table, source_id: s.id,
      source_version_id: s.versionId, locator: JSON.stringify(s.locator),
    }));
    await insertArtifacts(trx, artifacts);
    const contributions = written.facts.map((fact) => ({ fact_id: fact.id, artifact_id: artifacts[fact.index]!.id, contribution: sources[fact.index]!.contribution }));
    await insertFactContributions(trx, contributions);

    await activate(trx, input.projectId, generationId, now);
    await setGenerationCounts(trx, generationId, { sources: sources.length, facts: written.facts.length });
    return { generationId, facts: written.facts.length };
  });
}

async function findBuild(db: Database, buildKey: string): Promise<GraphBuildResult | undefined> {
  const row = await findGenerationByBuildKey(db, buildKey);
  return row && { generationId: row.id, facts: row.facts };
}

/**
 * The switch, inside the build's transaction: the previous active generation is retired and its
 * facts expire (system time: no longer what we believe), the new one becomes active. Readers see
 * the old generation or the new one, never both or neither; the partial unique index
 * `graph_generations_one_active` holds whatever else happens.
 */
async function activate(trx: Database, projectId: string, generationId: string, now: Date): Promise<void> {
  const retired = await retireActiveGenerations(trx, projectId, now);
  if (retired.length > 0) await expireGenerationFacts(trx, retired.map((r) => r.id), now);
  await markGenerationActive(trx, generationId, now);
}
