import { sql, type Selectable } from 'kysely';
import type { Database } from '../../db/client.js';
import type { RunCallbackDeliveriesTable } from '../../db/types.js';
import type { StoredRunEvent } from '../run-events-repository.js';
import type { SigningSecretsRow } from './outbound-secret-repository.js';

export type CallbackDeliveryRow = Selectable<RunCallbackDeliveriesTable>;

/** What a delivery attempt needs before its POST, read in one round trip (issue 44: the first attempt leaves within 200 ms of the event). */
export interface DeliveryContext {
  event: StoredRunEvent;
  /** A 2xx already came back for this event (an activity retried after its POST succeeded). */
  delivered: boolean;
  /** The team the run was recorded against; undefined when the run is gone. */
  teamId: string | undefined;
  /** The team's outbound secrets, when it has them yet. */
  secret: SigningSecretsRow | undefined;
}

/**
 * The run's event the callback selected, by its key (`run_complete`, `<blockId>:block_waiting`) or,
 * for the terminal one, whichever it was; with its delivery status, its run's team and that team's
 * outbound secret. Undefined while the event is not stored.
 */
export async function findDeliveryContext(db: Database, runId: string, selector: { key: string } | { terminal: true }): Promise<DeliveryContext | undefined> {
  let query = db.selectFrom('run_events as e')
    .leftJoin('runs as r', 'r.id', 'e.run_id')
    .leftJoin('run_callback_deliveries as d', (join) => join.onRef('d.run_id', '=', 'e.run_id').onRef('d.event_id', '=', 'e.id'))
    .leftJoin('team_outbound_webhook_secrets as s', 's.team_id', 'r.team_id')
    .select(['e.id', 'e.type', 'e.payload', 'r.team_id', 'd.status as delivery_status',
      's.secret_sealed', 's.previous_secret_sealed', 's.previous_expires_at'])
    .where('e.run_id', '=', runId);
  query = 'key' in selector ? query.where('e.event_key', '=', selector.key) : query.where('e.type', 'in', ['run_complete', 'run_error']);
  const row = await query.orderBy('e.id').limit(1).executeTakeFirst();
  if (!row) return undefined;
  return {
    event: { id: Number(row.id), type: row.type as StoredRunEvent['type'], payload: row.payload as Record<string, unknown> },
    delivered: row.delivery_status === 'delivered',
    teamId: row.team_id ?? undefined,
    secret: row.secret_sealed
      ? { secret_sealed: row.secret_sealed, previous_secret_sealed: row.previous_secret_sealed, previous_expires_at: row.previous_expires_at }
      : undefined,
  };
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
