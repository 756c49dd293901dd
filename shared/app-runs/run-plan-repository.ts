import { executePrepared, type Database } from '../db/client.js';

// Kysely queries only, for a run's plan: parsing and caching live in run-plan.ts.

/** A deployment's published snapshot (any deployment, by id). Every run start asks: a prepared statement. */
export async function findDeploymentSnapshot(db: Database, deploymentId: string): Promise<{ snapshot: unknown } | undefined> {
  const [row] = await executePrepared(db, 'run_plan_snapshot', db.selectFrom('deployments').select('snapshot').where('id', '=', deploymentId).compile());
  return row;
}
