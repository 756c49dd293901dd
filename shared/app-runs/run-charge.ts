import { sql } from 'kysely';
import { executePrepared, type Database } from '../db/client.js';
import { newId } from '../ids.js';
import type { StoredRunEvent } from './event-log.js';
import { RUN_EVENTS_CHANNEL } from './events.js';

export interface ChargedRunRow {
  runId: string; deploymentId: string; documentId: string; teamId: string; triggerSource: string;
  apiKeyId: string | null; userId: string | null; inputs: Record<string, unknown>; timeoutSeconds: number | null;
}

/**
 * Charges the paying team, inserts the `runs` row, its credit transaction, the API key's usage and
 * the `run_start` event, and NOTIFYs `run_events` — one statement, so one round trip and one commit
 * stand between a run request and its first streamed byte. Every part hangs off the `charged` row:
 * when the balance is short nothing is written and the result is null (402 for the caller).
 * Foreign keys between the parts are checked at the end of the statement, so the run_start event
 * may name the run inserted beside it.
 */
export async function insertChargedRun(db: Database, run: ChargedRunRow, costMilli: number): Promise<{ startEvent: StoredRunEvent } | null> {
  const startPayload = { runId: run.runId, documentId: run.documentId };
  const rows = await executePrepared(db, 'insert_charged_run', sql<{ start_event_id: string }>`
    WITH charged AS (
      UPDATE credit_balances SET balance_milli = balance_milli - ${costMilli}, updated_at = now()
      WHERE team_id = ${run.teamId} AND balance_milli >= ${costMilli}
      RETURNING team_id
    ), inserted_run AS (
      INSERT INTO runs (id, deployment_id, document_id, team_id, trigger_source, api_key_id, user_id, inputs, timeout_seconds)
      SELECT ${run.runId}::uuid, ${run.deploymentId}::uuid, ${run.documentId}::uuid, team_id, ${run.triggerSource}::text, ${run.apiKeyId}::uuid, ${run.userId}::uuid,
        ${JSON.stringify(run.inputs)}::jsonb, ${run.timeoutSeconds}::int
      FROM charged
      RETURNING id
    ), charge AS (
      INSERT INTO credit_transactions (id, team_id, amount_milli, reason, reference, created_by)
      SELECT ${newId()}::uuid, team_id, ${-costMilli}::bigint, 'run', ${`run:${run.runId}`}::text, NULL FROM charged
    ), key_usage AS (
      UPDATE api_keys SET usage_credits = usage_credits + ${costMilli}, last_used_at = now()
      WHERE id = ${run.apiKeyId}::uuid AND EXISTS (SELECT 1 FROM charged)
    ), start_event AS (
      INSERT INTO run_events (run_id, event_key, type, payload)
      SELECT id, 'run_start', 'run_start', ${JSON.stringify(startPayload)}::jsonb FROM inserted_run
      RETURNING id
    )
    SELECT id AS start_event_id, pg_notify(${RUN_EVENTS_CHANNEL}, ${run.runId}) FROM start_event
  `.compile(db));
  // bigserial arrives as a string from pg.
  return rows[0] ? { startEvent: { id: Number(rows[0].start_event_id), type: 'run_start', payload: startPayload } } : null;
}
