import type { Insertable, Selectable } from 'kysely';
import type { Database } from '../db/client.js';
import type { RunIdempotencyKeysTable } from '../db/types.js';

// Kysely queries only, on `run_idempotency_keys`: the window and the 409 live in run-idempotency.ts.

export async function findIdempotencyKey(db: Database, scope: string, key: string): Promise<Pick<Selectable<RunIdempotencyKeysTable>, 'run_id' | 'request_hash' | 'created_at'> | undefined> {
  return db.selectFrom('run_idempotency_keys').select(['run_id', 'request_hash', 'created_at'])
    .where('scope', '=', scope).where('key', '=', key).executeTakeFirst();
}

/** Releases the key for reuse, unless it was claimed again (for another run) meanwhile. */
export async function deleteIdempotencyKey(db: Database, scope: string, key: string, runId: string): Promise<void> {
  await db.deleteFrom('run_idempotency_keys').where('scope', '=', scope).where('key', '=', key).where('run_id', '=', runId).execute();
}

/** Claims the key for a run (inside the run's transaction); false when another request holds it. */
export async function claimIdempotencyKey(trx: Database, values: Insertable<RunIdempotencyKeysTable>): Promise<boolean> {
  const claimed = await trx.insertInto('run_idempotency_keys')
    .values(values)
    .onConflict((oc) => oc.columns(['scope', 'key']).doNothing()).executeTakeFirst();
  return claimed.numInsertedOrUpdatedRows !== 0n;
}
