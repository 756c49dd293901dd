import { sql, type Selectable } from 'kysely';
import type { Database } from '../../db/client.js';
import type { RunCallbackDeliveriesTable } from '../../db/types.js';
import type { StoredRunEvent } from '../run-events-repository.js';

export type CallbackDeliveryRow = Selectable<RunCallbackDeliveriesTable>;

/** A run's event the callback selected, by its key (`run_complete`, `<blockId>:block_waiting`) or, for the terminal one, whichever it was. */
export async function findCallbackEvent(db: Database, runId: string, selector: { key: string } | { terminal: true }): Promise<StoredRunEvent | undefined> {
  let query = db.selectFrom('run_events').select(['id', 'type', 'payload']).where('run_id', '=', runId);
  query = 'key' in selector ? query.where('event_key', '=', selector.key) : query.where('type', 'in', ['run_complete', 'run_error']);
  const row = await query.orderBy('id').limit(1).executeTakeFirst();
  return row && { id: Number(row.id), type: row.type as StoredRunEvent['type'], payload: row.payload as Record<string, unknown> };
}

export async function findDelivery(db: Database, runId: string, eventId: number): Promise<CallbackDeliveryRow | undefined> {
  return db.selectFrom('run_callback_deliveries').selectAll().where('run_id', '=', runId).where('event_id', '=', eventId).executeTakeFirst();
}

/** One attempt's outcome: counted, and `delivered` once a 2xx came back (a delivered row stays delivered). */
export async function recordDeliveryAttempt(db: Database, attempt: {
  runId: string; eventId: number; type: string; url: string; delivered: boolean; statusCode: number | null; error: string | null;
}): Promise<void> {
  const status = attempt.delivered ? 'delivered' as const : 'pending' as const;
  await db.insertInto('run_callback_deliveries').values({
    run_id: attempt.runId, event_id: attempt.eventId, type: attempt.type, url: attempt.url, attempts: 1, status,
    last_status_code: attempt.statusCode, last_error: attempt.error, delivered_at: attempt.delivered ? new Date() : null,
  }).onConflict((oc) => oc.columns(['run_id', 'event_id']).doUpdateSet({
    attempts: sql`run_callback_deliveries.attempts + 1`,
    status: sql`CASE WHEN run_callback_deliveries.status = 'delivered' THEN 'delivered' ELSE ${status} END`,
    last_status_code: attempt.statusCode, last_error: attempt.error,
    delivered_at: sql`coalesce(run_callback_deliveries.delivered_at, ${attempt.delivered ? new Date() : null}::timestamptz)`,
    updated_at: new Date(),
  })).execute();
}

/** The retries ran out (24 h) or the URL is refused: the event stays undelivered. */
export async function markDeliveryFailed(db: Database, runId: string, eventId: number, error: string): Promise<void> {
  await db.updateTable('run_callback_deliveries')
    .set({ status: 'failed', last_error: error, updated_at: new Date() })
    .where('run_id', '=', runId).where('event_id', '=', eventId).where('status', '<>', 'delivered').execute();
}

export async function listDeliveries(db: Database, runId: string): Promise<CallbackDeliveryRow[]> {
  return db.selectFrom('run_callback_deliveries').selectAll().where('run_id', '=', runId).orderBy('event_id').execute();
}

/** The team a run was recorded against (whose outbound secret signs its callbacks). */
export async function findRunTeamId(db: Database, runId: string): Promise<string | undefined> {
  return (await db.selectFrom('runs').select('team_id').where('id', '=', runId).executeTakeFirst())?.team_id;
}
