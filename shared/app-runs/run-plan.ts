import { LRUCache } from 'lru-cache';
import type { Database } from '../db/client.js';
import { exceedsClaimThreshold, jsonBytes } from './claims.js';
import type { Graph } from '../documents/graph.js';
import { parseRunnableGraph } from '../documents/graph-schema.js';
import { findDeploymentSnapshot } from './run-plan-repository.js';

/** What the run workflow needs from PostgreSQL: the published graph and the validated inputs. */
export interface RunPlan {
  documentId: string;
  graph: Graph;
  /** Already validated by the API, with `_trigger` set; values over the claim threshold are claims (`input:<name>`). */
  inputs: Record<string, unknown>;
}

/**
 * Published graphs, parsed, by deployment id. A deployment's snapshot never changes once published
 * (a new version is a new deployment), so an entry never goes stale; the cache is bounded by the
 * snapshots' JSON size. Null (a snapshot that does not validate) is not cached.
 */
const runnableGraphs = new LRUCache<string, Graph>({ maxSize: 32 * 1024 * 1024, sizeCalculation: (graph) => Math.max(1, jsonBytes(graph)) });

async function runnableGraph(db: Database, deploymentId: string): Promise<Graph | null> {
  const cached = runnableGraphs.get(deploymentId);
  if (cached) return cached;
  const row = await findDeploymentSnapshot(db, deploymentId);
  const graph = row ? parseRunnableGraph(row.snapshot) : null;
  if (graph) runnableGraphs.set(deploymentId, graph);
  return graph;
}

/**
 * A run's plan as the starter knows it (run-service.ts): the published graph, parsed once per
 * deployment (null when the snapshot does not validate: the run is refused before it is recorded),
 * and the plan to pass as the workflow's argument, which saves the workflow a local activity
 * (`loadRunPlan`) and an activation. History holds the plan either way (as the argument, or as that
 * activity's result), so a plan whose JSON is over the claim threshold is not inlined: the workflow
 * loads it, and `loadRunPlan` stores its large inputs as claims.
 */
export const planForRun = {
  graph: runnableGraph,
  inline(graph: Graph, documentId: string, inputs: Record<string, unknown>): RunPlan | null {
    const plan: RunPlan = { documentId, graph, inputs };
    return exceedsClaimThreshold(plan) ? null : plan;
  },
};
