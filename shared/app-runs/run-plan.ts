import { LRUCache } from 'lru-cache';
import { executePrepared, type Database } from '../db/client.js';
import { exceedsClaimThreshold, jsonBytes } from './claims.js';
import type { Graph } from './graph.js';
import { parseRunnableGraph } from './graph-schema.js';

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
  const [row] = await executePrepared(db, 'run_plan_snapshot', db.selectFrom('deployments').select('snapshot').where('id', '=', deploymentId).compile());
  const graph = row ? parseRunnableGraph(row.snapshot) : null;
  if (graph) runnableGraphs.set(deploymentId, graph);
  return graph;
}

/**
 * The plan of a run just recorded, to pass as the workflow's argument: it saves the workflow a
 * local activity (`loadRunPlan`) and an activation. History holds the plan either way (as the
 * argument, or as that activity's result). Null when the plan's JSON is over the claim threshold (the
 * workflow then loads it: `loadRunPlan` stores large inputs as claims) or the
 * snapshot does not validate (the workflow's own load fails the run, as it always did).
 */
export async function inlineRunPlan(db: Database, run: { deploymentId: string; documentId: string; inputs: Record<string, unknown> }): Promise<RunPlan | null> {
  const graph = await runnableGraph(db, run.deploymentId);
  if (!graph) return null;
  const plan: RunPlan = { documentId: run.documentId, graph, inputs: run.inputs };
  return exceedsClaimThreshold(plan) ? null : plan;
}
