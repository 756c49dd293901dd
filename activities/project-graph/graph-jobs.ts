import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { LlmError } from '../../shared/llm-providers/llm-client.js';
import { readGraphConfig } from '../../shared/project-graph/config.js';
import { buildGeneration } from '../../shared/project-graph/build.js';
import { embedFacts, graphEmbedder } from '../../shared/project-graph/embeddings.js';
import type { GraphBuildResult, GraphIngestInput, GraphIngestOutcome } from '../../shared/project-graph/contracts.js';
import { extractEpisode, type Extraction } from '../../shared/project-graph/extract.js';
import { completeIngestJob, failJob, markJobRunning, type EpisodeInput } from '../../shared/project-graph/jobs.js';
import { ExtractionRefused, extractWithLlm } from '../../shared/project-graph/llm-extract.js';
import { createFileStore } from '../../shared/storage/index.js';
import type { ActivityDeps } from '../deps.js';

/** The activity's context, or undefined outside Temporal (tests calling the function). */
function activityContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined;
  }
}

/** How often the extraction activity heartbeats; the workflow's heartbeatTimeout (10 s) allows for a few misses. */
const HEARTBEAT_INTERVAL_MS = 3_000;

/**
 * Activities of the graph workflows (workflows/project-graph/). Each is idempotent: a worker killed
 * mid-activity makes Temporal run it again on another worker, which finds the job where the first left it.
 */
export function createGraphActivities({ db, settings, config }: Pick<ActivityDeps, 'db' | 'settings' | 'config'>) {
  /** `ingestGraphEpisode`'s work; `signal` aborts the model call when Temporal cancels the activity. */
  async function ingest(input: GraphIngestInput, signal: AbortSignal | undefined): Promise<GraphIngestOutcome> {
    const job = await markJobRunning(db, input.jobId);
    if (!job) return { ok: false, error: 'Graph job not found' };
    if (job.status === 'completed') return { ok: true, result: job.result as Awaited<ReturnType<typeof completeIngestJob>> };
    if (job.status === 'failed') return { ok: false, error: job.error ?? 'failed' };
    // Fails closed: a job accepted just before the feature was turned off does not run.
    const graph = await readGraphConfig(settings, config);
    if (graph.state !== 'ready') return { ok: false, error: `The project graph is ${graph.state === 'off' ? 'turned off' : 'not fully configured'}` };
    const episode = job.input as EpisodeInput;
    const name = episode.name ?? `Episode ${job.id}`;
    let extraction: Extraction;
    try {
      extraction = graph.extractor === 'llm'
        ? await extractWithLlm({ baseUrl: config.LLM_BASE_URL!, apiKey: config.LLM_API_KEY, model: graph.model!, signal }, { name, content: episode.content })
        : extractEpisode(name, episode.content);
    } catch (error) {
      if (error instanceof ExtractionRefused) return { ok: false, error: error.message };
      throw error;
    }
    if (extraction.facts.length === 0) return { ok: false, error: 'The episode yielded no facts' };
    // With an embedding model, the facts are written with their vectors or not at all: a provider
    // refusal (4xx: unknown model, bad key) fails the job with the reason; a passing failure is
    // thrown, and the activity is retried (the extraction with it) within the workflow's 30 minutes.
    let embeddings: number[][] | null;
    try {
      embeddings = await embedFacts(graphEmbedder(graph, config), extraction.facts, signal);
    } catch (error) {
      if (error instanceof LlmError && !error.retryable) return { ok: false, error: error.message };
      throw error;
    }
    const result = await completeIngestJob(db, job, { name, content: episode.content, extractor: graph.extractor }, extraction, embeddings);
    return { ok: true, result };
  }

  return {
    async startGraphIngest(input: GraphIngestInput): Promise<{ found: boolean }> {
      return { found: (await markJobRunning(db, input.jobId)) !== undefined };
    },

    /**
     * Extracts (built-in, or the configured model) and writes the episode; a refusal is an outcome,
     * not a retry. Heartbeats every few seconds while it works (a model call can take minutes), so
     * that a killed worker is noticed within the workflow's heartbeatTimeout and the activity runs again.
     */
    async ingestGraphEpisode(input: GraphIngestInput): Promise<GraphIngestOutcome> {
      const context = activityContext();
      context?.heartbeat();
      const beat = context ? setInterval(() => context.heartbeat(), HEARTBEAT_INTERVAL_MS) : undefined;
      try {
        return await ingest(input, context?.cancellationSignal);
      } finally {
        clearInterval(beat);
      }
    },

    async failGraphJob(input: { jobId: string; error: string }): Promise<void> {
      await failJob(db, input.jobId, input.error);
    },

    /**
     * Builds and activates a memory generation; `buildKey` makes a retried build return the first
     * one's generation. With graph.config `embeddingModel`, its facts are embedded: a passing
     * provider failure is retried with the activity, a refusal (4xx) fails the build at once.
     */
    async buildGraphGeneration(input: { projectId: string; buildKey: string }): Promise<GraphBuildResult> {
      const embedder = graphEmbedder(await readGraphConfig(settings, config), config);
      try {
        return await buildGeneration(db, {
          projectId: input.projectId, buildKey: input.buildKey, store: createFileStore(config), embedder, signal: activityContext()?.cancellationSignal,
        });
      } catch (error) {
        if (error instanceof LlmError && !error.retryable) throw ApplicationFailure.nonRetryable(error.message, 'GraphEmbeddingsRejected');
        throw error;
      }
    },
  };
}
