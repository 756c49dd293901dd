import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../../shared/errors.js';
import { openProjectGraph } from '../../../shared/project-graph/config.js';
import { graphEmbedder } from '../../../shared/project-graph/embeddings.js';
import { GRAPH_UNAVAILABLE, graphErrors } from '../../../shared/project-graph/errors.js';
import { getProjectJob, submitEpisode } from '../../../shared/project-graph/jobs.js';
import { searchGraph } from '../../../shared/project-graph/search.js';
import { graphStatus } from '../../../shared/project-graph/status.js';
import { startPathDeps, type AppDeps } from '../../deps.js';
import { principalOf } from '../../plugins/auth.js';
import { accessCallerOf } from '../../access-caller.js';

const tags = ['project-graph'];
// Path ids are checked by the services, so a malformed id answers like a missing object.
const projectParams = z.object({ projectId: z.string() });
const jobParams = z.object({ projectId: z.string(), jobId: z.string() });
const unavailable = z.object({ error: z.literal(GRAPH_UNAVAILABLE), message: z.string() });

const episodeBody = z.object({
  name: z.string().trim().min(1).max(200).optional(),
  content: z.string().trim().min(1).max(100_000),
});
// `asOf`, `as_of` and other modes are refused before this schema runs (preValidation below).
const searchBody = z.object({
  query: z.string().trim().min(1).max(1_000),
  mode: z.literal('current').optional().describe('only "current" (the default) is accepted'),
  limit: z.number().int().min(1).max(50).default(10),
});

const evidence = z.object({ sourceType: z.enum(['database', 'file']), sourceVersionId: z.uuid(), locator: z.record(z.string(), z.unknown()) });

/** Any `mode` but `current`, or an `asOf` / `as_of` field: the graph answers only the current view. */
function asksForAnotherView(body: unknown): boolean {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return false;
  const fields = body as Record<string, unknown>;
  return (fields.mode !== undefined && fields.mode !== 'current') || 'asOf' in fields || 'as_of' in fields;
}

/**
 * Spec §4.5: every failure that is not the caller's is the same 503 `graph_unavailable` (the store
 * or Temporal away, verification that could not run), never a partial answer. The cause is logged.
 */
async function failClosed<T>(request: FastifyRequest, body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (error) {
    if (error instanceof AppError && error.status < 500) throw error;
    if (error instanceof AppError && error.error === GRAPH_UNAVAILABLE) throw error;
    request.log.error({ err: error }, 'graph request failed closed');
    throw graphErrors.storeUnavailable();
  }
}

/** Project graph memory (spec §4.5, docs/project-graph.md): combined authentication plus project access. */
export const projectGraphRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  const { db, settings, config } = deps;
  const base = '/projects/:projectId/graph';
  const open = (request: FastifyRequest, projectId: string) => openProjectGraph(db, settings, config, accessCallerOf(request), projectId);

  app.get(`${base}/status`, {
    config: { access: 'combined' },
    schema: {
      tags, summary: 'Feature state, configuration and the project\'s graph store', params: projectParams,
      response: {
        200: z.object({
          enabled: z.literal(true), configured: z.literal(true), extractor: z.enum(['builtin', 'llm']),
          store: z.object({ state: z.enum(['active', 'no_active_generation']), generationId: z.string().nullable(), facts: z.number(), activatedAt: z.string().nullable() }),
        }),
        503: unavailable,
      },
    },
  }, async (request) => failClosed(request, async () => {
    const { graph, project } = await open(request, request.params.projectId);
    return graphStatus(db, graph, project.id);
  }));

  app.post(`${base}/episodes`, {
    config: { access: 'combined' },
    schema: {
      tags, summary: 'Submit an episode; a graph-ingest workflow extracts its entities and facts', params: projectParams, body: episodeBody,
      response: { 202: z.object({ jobId: z.uuid() }), 503: unavailable },
    },
  }, async (request, reply) => failClosed(request, async () => {
    const { project } = await open(request, request.params.projectId);
    const principal = principalOf(request, 'jwt', 'api-key');
    const accepted = await submitEpisode(
      { ...startPathDeps(deps), taskQueueSuffix: config.TEMPORAL_TASK_QUEUE_SUFFIX },
      { projectId: project.id, teamId: project.team_id, userId: principal.userId, episode: { name: request.body.name, content: request.body.content } },
    );
    reply.code(202);
    return accepted;
  }));

  app.get(`${base}/jobs/:jobId`, {
    config: { access: 'combined' },
    schema: {
      tags, summary: 'A graph job of this project: status, result or failure', params: jobParams,
      response: {
        200: z.object({ jobId: z.string(), status: z.enum(['queued', 'running', 'completed', 'failed']), result: z.unknown().optional(), error: z.string().optional() }),
        503: unavailable,
      },
    },
  }, async (request) => failClosed(request, async () => {
    const { project } = await open(request, request.params.projectId);
    return getProjectJob(db, project.id, request.params.jobId);
  }));

  app.post(`${base}/search`, {
    config: { access: 'combined' },
    schema: {
      tags, summary: 'Search the current, verified view of the project\'s active memory generation', params: projectParams, body: searchBody,
      response: {
        200: z.object({ generationId: z.uuid(), results: z.array(z.object({ uuid: z.string(), fact: z.string(), evidence: z.array(evidence) })) }),
        503: unavailable,
      },
    },
    // Spec §4.5 rule 2, before the body's other checks: a point in time or a history is refused as such.
    preValidation: async (request) => {
      if (asksForAnotherView(request.body)) throw graphErrors.currentOnly();
    },
  }, async (request) => failClosed(request, async () => {
    const { graph, project } = await open(request, request.params.projectId);
    // Embeddings only help the ranking: a provider that fails leaves the text retrievers to answer.
    return searchGraph(db, { projectId: project.id, query: request.body.query, limit: request.body.limit }, {
      embedder: graphEmbedder(graph, config),
      onEmbeddingError: (error) => request.log.warn({ err: error }, 'graph search ranked by text only: the query could not be embedded'),
    });
  }));
};
