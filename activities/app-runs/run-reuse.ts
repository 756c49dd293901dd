import { sql } from 'kysely';
import type { ActivityDeps } from '../deps.js';
import { storeClaim } from './claim-store.js';

/**
 * A retry from the failed block (docs/long-runs.md): the outputs of the blocks that completed in the
 * run it retries, from that run's `block_complete` events. A large one is stored for the new run
 * and travels as a claim, like any large output.
 */
export function createRunReuseActivities({ db }: Pick<ActivityDeps, 'db'>) {
  return {
    async loadReusedOutputs(input: { runId: string; fromRunId: string }): Promise<Record<string, unknown>> {
      const rows = await db.selectFrom('run_events').select([sql<string>`payload->>'blockId'`.as('block_id'), sql<unknown>`payload->'output'`.as('output')])
        .where('run_id', '=', input.fromRunId).where('type', '=', 'block_complete').orderBy('id').execute();
      const outputs: Record<string, unknown> = {};
      for (const row of rows) outputs[row.block_id] = await storeClaim(db, input.runId, `output:${row.block_id}`, row.output ?? null);
      return outputs;
    },
  };
}
