import { sql } from 'kysely';
import type { Database } from '../../shared/db/client.js';
import { startPeriodic } from '../../shared/periodic.js';

/** Stored payloads outlive their run by this long (for a look at a run that just ended), then go. */
export const RUN_PAYLOAD_RETENTION_MINUTES = 60;
const SWEEP_INTERVAL_MS = 10 * 60_000;
const BATCH = 500;

/**
 * Deletes the `run_payloads` of runs that finished more than `retentionMinutes` ago, in batches so
 * one pass never holds many locks. A finished run no longer needs them: `finishRun` wrote the
 * resolved values into `run_complete` and `runs.result`. Returns how many rows went.
 */
export async function sweepRunPayloads(db: Database, retentionMinutes = RUN_PAYLOAD_RETENTION_MINUTES): Promise<number> {
  let deleted = 0;
  for (;;) {
    const { numAffectedRows = 0n } = await sql`
      DELETE FROM run_payloads WHERE (run_id, key) IN (
        SELECT p.run_id, p.key FROM run_payloads p JOIN runs r ON r.id = p.run_id
        WHERE r.finished_at < now() - make_interval(mins => ${retentionMinutes}) LIMIT ${BATCH})
    `.execute(db);
    deleted += Number(numAffectedRows);
    if (Number(numAffectedRows) < BATCH) return deleted;
  }
}

/** The worker's sweeper: a pass at start, then every 10 minutes (every worker may run one; deletes are idempotent). */
export function startRunPayloadSweeper(db: Database, log: (message: string) => void) {
  return startPeriodic(async () => {
    const deleted = await sweepRunPayloads(db);
    if (deleted > 0) log(`run payloads swept: ${deleted}`);
  }, { intervalMs: SWEEP_INTERVAL_MS, onError: (error) => log(`run payload sweep failed, will retry: ${error.message}`) });
}
