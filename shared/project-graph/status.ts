import type { Database } from '../db/client.js';
import type { GraphConfig } from './config.js';
import { findActiveGenerationSummary } from './repository.js';

// `GET …/graph/status`: reached only when the feature is on and configured (otherwise the 503),
// so it reports the configuration's shape and the graph store's state for this project.

export interface GraphStatusView {
  enabled: true;
  configured: true;
  extractor: 'builtin' | 'llm';
  store: { state: 'active' | 'no_active_generation'; generationId: string | null; facts: number; activatedAt: string | null };
}

export async function graphStatus(db: Database, graph: GraphConfig, projectId: string): Promise<GraphStatusView> {
  const active = await findActiveGenerationSummary(db, projectId);
  return {
    enabled: true, configured: true, extractor: graph.extractor,
    store: active
      ? { state: 'active', generationId: active.id, facts: active.facts, activatedAt: active.activated_at?.toISOString() ?? null }
      : { state: 'no_active_generation', generationId: null, facts: 0, activatedAt: null },
  };
}
