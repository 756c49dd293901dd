import { requireProject, type AccessCaller } from '../access/service.js';
import type { Config } from '../config.js';
import type { Database } from '../db/client.js';
import type { SiteSettingsCache } from '../site-settings/cache.js';
import { graphErrors } from './errors.js';

// The switch and configuration of the graph (site setting `graph.config`). Off or incomplete means
// every graph endpoint fails closed with the same 503.

export type GraphConfigState = 'off' | 'incomplete' | 'ready';

export interface GraphConfig {
  state: GraphConfigState;
  extractor: 'builtin' | 'llm';
  /** The extractor's chat model; only with `extractor: llm`. */
  model: string | null;
  /**
   * The embedding model (a different thing from `model`): facts and queries are embedded with it
   * when it is set AND LLM_BASE_URL is configured; null otherwise, and search ranks by text only.
   * It never makes the configuration incomplete: without it everything works as before.
   */
  embeddingModel: string | null;
}

/** `extractor: llm` needs a model and a provider to call (LLM_BASE_URL); the built-in one needs nothing. */
export async function readGraphConfig(settings: SiteSettingsCache, config: Pick<Config, 'LLM_BASE_URL'>): Promise<GraphConfig> {
  const setting = await settings.get('graph.config');
  const extractor = setting.extractor === 'llm' ? 'llm' : 'builtin';
  const model = setting.model ?? null;
  const embeddingModel = setting.embeddingModel && config.LLM_BASE_URL ? setting.embeddingModel : null;
  if (!setting.enabled) return { state: 'off', extractor, model, embeddingModel };
  const complete = extractor === 'builtin' || (model !== null && Boolean(config.LLM_BASE_URL));
  return { state: complete ? 'ready' : 'incomplete', extractor, model, embeddingModel };
}

/** The configuration, or the stable 503 when the feature is off or incomplete. */
export async function requireGraphReady(settings: SiteSettingsCache, config: Pick<Config, 'LLM_BASE_URL'>): Promise<GraphConfig> {
  const graph = await readGraphConfig(settings, config);
  if (graph.state === 'off') throw graphErrors.off();
  if (graph.state === 'incomplete') throw graphErrors.incomplete();
  return graph;
}

/**
 * What every graph endpoint asks first: the switch (fails closed before anything else is read),
 * then the caller's access to the project (the access module; 404 'Project not found' otherwise).
 */
export async function openProjectGraph(
  db: Database, settings: SiteSettingsCache, config: Pick<Config, 'LLM_BASE_URL'>, caller: AccessCaller, projectId: string,
) {
  const graph = await requireGraphReady(settings, config);
  const project = await requireProject(db, caller, projectId);
  return { graph, project };
}
