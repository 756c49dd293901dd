import { sql, type RawBuilder } from 'kysely';
import { executePrepared, type Database } from '../db/client.js';
import type { RunStatus } from '../db/types.js';
import { newId } from '../ids.js';
import { insertWorkflowStart, type WorkflowStart } from '../workflow-starts/outbox.js';
import { unclaimed } from '../workflow-starts/outbox-repository.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import type { KeyedRunEvent } from './contracts.js';
import { RUN_EVENTS_CHANNEL, terminalEventTypes, type RunEventType } from './events.js';

// The one owner of `run_events`: every statement that reads or writes the table is here. Events are
// stored with `type` in its column and the other fields in `payload`, keyed per run (`event_key`) so
// a retried writer re-sends the same keys and they are ignored, and every write NOTIFYs
// `run_events` with the run id (delivered on commit) so streaming readers wake at once; the final
// write adds the terminal event to it (`finishRunWithEvents`).

/** A run that has not ended: working (`running`) or paused on a `wait` or `approval` block (`waiting`). */
export const isOpenRunStatus = (status: string): boolean => status === 'running' || status === 'waiting';

export interface StoredRunEvent { id: number; type: RunEventType; payload: Record<string, unknown> }

/**
 * Events as rows `e(key, type, payload, ord)` for a FROM clause: `unnest` over three array
 * parameters, `ord` their position, so `ORDER BY e.ord` inserts them (and numbers their ids) in order.
 */
function eventRows(events: ReadonlyArray<KeyedRunEvent>): RawBuilder<unknown> {
  const keys: string[] = []; const types: string[] = []; const payloads: string[] = [];
  for (const { key, event: { type, ...payload } } of events) {
    keys.push(key); types.push(type); payloads.push(JSON.stringify(payload));
  }
  return sql`unnest(${keys}::text[], ${types}::text[], ${payloads}::jsonb[]) WITH ORDINALITY AS e(key, type, payload, ord)`;
}

/**
 * Appends events idempotently (a retried writer re-sends the same keys, which are ignored) and
 * NOTIFYs `run_events` with the run id when something was appended; the notification is delivered
 * on commit. One statement: the rows are inserted in the order given, so their ids follow it.
 */
export async function insertRunEvents(db: Database, runId: string, events: KeyedRunEvent[]): Promise<void> {
  if (events.length === 0) return;
  await sql`
    WITH appended AS (
      INSERT INTO run_events (run_id, event_key, type, payload)
      SELECT ${runId}::uuid, e.key, e.type, e.payload FROM ${eventRows(events)}
      ORDER BY e.ord
      ON CONFLICT (run_id, event_key) DO NOTHING
      RETURNING 1
    )
    SELECT pg_notify(${RUN_EVENTS_CHANNEL}, ${runId}) WHERE EXISTS (SELECT 1 FROM appended)
  `.execute(db);
}

/**
 * A step of the run workflow: appends events unless the run is finished, in one statement that
 * takes a share lock on the run, so no event ever follows the terminal one (`finishRunWithEvents`
 * updates the same row). Null when the run does not exist.
 */
export async function appendWhileRunning(db: Database, runId: string, events: KeyedRunEvent[]): Promise<{ appended: number; runOpen: boolean } | null> {
  const [row] = await executePrepared(db, 'append_run_events', sql<{ status: RunStatus | null; appended: number }>`
    WITH run AS (
      SELECT status FROM runs WHERE id = ${runId}::uuid FOR SHARE
    ), appended AS (
      INSERT INTO run_events (run_id, event_key, type, payload)
      SELECT ${runId}::uuid, e.key, e.type, e.payload FROM ${eventRows(events)}
      WHERE EXISTS (SELECT 1 FROM run WHERE status IN ('running', 'waiting'))
      ORDER BY e.ord
      ON CONFLICT (run_id, event_key) DO NOTHING
      RETURNING 1
    ), notified AS (
      SELECT pg_notify(${RUN_EVENTS_CHANNEL}, ${runId}) WHERE EXISTS (SELECT 1 FROM appended)
    )
    SELECT (SELECT status FROM run) AS status, (SELECT count(*) FROM appended)::int AS appended, (SELECT count(*) FROM notified) AS notified
  `.compile(db));
  return row?.status ? { appended: row.appended, runOpen: isOpenRunStatus(row.status) } : null;
}

/** How a run ends in its row and its terminal event (`run_complete` payload or `run_error`'s). */
export interface RunEnding {
  status: Exclude<RunStatus, 'running' | 'waiting'>;
  terminal: { type: 'run_complete' | 'run_error'; payload: Record<string, unknown> };
  error: string | null;
}

/**
 * A terminal event this small rides in its NOTIFY (`<runId> <event as JSON>`), so a caller waiting
 * for the JSON result needs no read after it; PostgreSQL refuses payloads of 8000 bytes or more.
 */
const MAX_NOTIFIED_TERMINAL_BYTES = 7_900;

/**
 * Appends the walk's last events and the terminal one and makes the `runs` row final, in one
 * statement: a reader that sees the terminal event finds the row final. `run_complete` gets
 * `duration` from the database clock (from the row's creation) and is also the row's `result`.
 * A start of the run still in the outbox is done with: the run has ended. The NOTIFY carries the
 * stored terminal event when it is small (`MAX_NOTIFIED_TERMINAL_BYTES`), the run id alone otherwise.
 * Returns whether this call finished the run (false: it was already finished).
 */
export async function finishRunWithEvents(db: Database, runId: string, ending: RunEnding, events: KeyedRunEvent[]): Promise<boolean> {
  const { status: endStatus, terminal } = ending;
  const completed = terminal.type === 'run_complete';
  const terminalPayload = JSON.stringify(terminal.payload);
  const [row] = await executePrepared(db, 'finish_run', sql<{ finished: boolean }>`
    WITH finished AS (
      UPDATE runs SET
        status = ${endStatus},
        result = CASE WHEN ${completed}::boolean THEN ${terminalPayload}::jsonb
          || jsonb_build_object('duration', greatest(0, round(extract(epoch from clock_timestamp() - created_at) * 1000))::bigint) END,
        error = ${ending.error}::text,
        finished_at = now()
      WHERE id = ${runId}::uuid AND status IN ('running', 'waiting')
      RETURNING coalesce(result, ${terminalPayload}::jsonb) AS terminal_payload
    ), start_done AS (
      DELETE FROM workflow_starts WHERE workflow_id = ${workflowIds.appRun(runId)} AND EXISTS (SELECT 1 FROM finished)
    ), appended AS (
      INSERT INTO run_events (run_id, event_key, type, payload)
      SELECT ${runId}::uuid, walk.key, walk.type, walk.payload FROM (
        SELECT e.key, e.type, e.payload, e.ord FROM ${eventRows(events)}
        WHERE EXISTS (SELECT 1 FROM finished)
        UNION ALL
        SELECT ${terminal.type}::text, ${terminal.type}::text, terminal_payload, ${events.length + 1}::bigint FROM finished
      ) AS walk
      ORDER BY walk.ord
      ON CONFLICT (run_id, event_key) DO NOTHING
      RETURNING id, type, payload
    ), terminal_note AS (
      SELECT json_build_object('id', id, 'type', type, 'payload', payload)::text AS note FROM appended WHERE type = ${terminal.type}::text
    ), notified AS (
      SELECT pg_notify(${RUN_EVENTS_CHANNEL}, coalesce(
        (SELECT ${runId}::text || ' ' || note FROM terminal_note WHERE octet_length(note) <= ${MAX_NOTIFIED_TERMINAL_BYTES}), ${runId}::text
      )) WHERE EXISTS (SELECT 1 FROM appended)
    )
    SELECT EXISTS (SELECT 1 FROM finished) AS finished, (SELECT count(*) FROM notified) AS notified
  `.compile(db));
  return row?.finished === true;
}

/** The most events one read of a run returns; a reader that gets this many reads on after them. */
export const RUN_EVENTS_READ_LIMIT = 1000;

/** A run's events after `afterId`, in order, at most `RUN_EVENTS_READ_LIMIT`. */
export async function readRunEventsAfter(db: Database, runId: string, afterId: number): Promise<StoredRunEvent[]> {
  const rows = await executePrepared(db, 'read_run_events_after', db.selectFrom('run_events').select(['id', 'type', 'payload'])
    .where('run_id', '=', runId).where('id', '>', afterId).orderBy('id').limit(RUN_EVENTS_READ_LIMIT).compile());
  return rows.map((r) => ({ id: r.id, type: r.type as RunEventType, payload: r.payload as Record<string, unknown> }));
}

/**
 * Several runs' events, each after its own id, in one statement (the event hub's poll of every
 * followed run): per run in order, at most `RUN_EVENTS_READ_LIMIT` each.
 */
export async function readRunEventsAfterEach(db: Database, cursors: ReadonlyArray<{ runId: string; afterId: number }>): Promise<Map<string, StoredRunEvent[]>> {
  const rows = await executePrepared(db, 'read_run_events_after_each', sql<{ run_id: string; id: number; type: string; payload: unknown }>`
    SELECT c.run_id, e.id, e.type, e.payload
    FROM unnest(${cursors.map((c) => c.runId)}::uuid[], ${cursors.map((c) => c.afterId)}::bigint[]) AS c(run_id, after_id)
    CROSS JOIN LATERAL (
      SELECT id, type, payload FROM run_events
      WHERE run_id = c.run_id AND id > c.after_id
      ORDER BY id LIMIT ${RUN_EVENTS_READ_LIMIT}::int
    ) AS e
    ORDER BY c.run_id, e.id
  `.compile(db));
  const byRun = new Map<string, StoredRunEvent[]>();
  for (const r of rows) {
    const events = byRun.get(r.run_id) ?? [];
    events.push({ id: r.id, type: r.type as RunEventType, payload: r.payload as Record<string, unknown> });
    byRun.set(r.run_id, events);
  }
  return byRun;
}

/** The run's terminal event, if it has one. */
export async function findTerminalEvent(db: Database, runId: string): Promise<StoredRunEvent | undefined> {
  const row = await db.selectFrom('run_events').select(['id', 'type', 'payload'])
    .where('run_id', '=', runId).where('type', 'in', [...terminalEventTypes])
    .orderBy('id', 'desc').limit(1).executeTakeFirst();
  return row ? { id: row.id, type: row.type as RunEventType, payload: row.payload as Record<string, unknown> } : undefined;
}

/** A block's streamed chunks already in the log (earlier attempts of an `llm` activity), in order. */
export async function listBlockChunks(db: Database, runId: string, blockId: string): Promise<Array<{ key: string; delta: string }>> {
  const rows = await db.selectFrom('run_events').select(['event_key', 'payload'])
    .where('run_id', '=', runId).where('type', '=', 'block_chunk').where(sql<string>`payload->>'blockId'`, '=', blockId)
    .orderBy('id').execute();
  return rows.map((row) => ({ key: row.event_key, delta: (row.payload as { delta: string }).delta }));
}

export interface ChargedRunRow {
  runId: string; deploymentId: string; documentId: string; projectId: string; teamId: string; triggerSource: string;
  apiKeyId: string | null; userId: string | null; inputs: Record<string, unknown>; timeoutSeconds: number | null;
}

/**
 * Charges the paying team, inserts the `runs` row, its credit transaction, the API key's usage,
 * the `run_start` event and the workflow start — one statement, so one round trip and one commit
 * stand between a run request and its first streamed byte. It sends no NOTIFY: nobody can follow a
 * run before this commit hands its id to the requester, which gets `run_start` from the result and
 * follows the log after it (a notification would only wake the API's listener for nothing).
 * Every part hangs off the `charged` row:
 * when the balance is short nothing is written and the result is null (402 for the caller).
 * Foreign keys between the parts are checked at the end of the statement, so the run_start event
 * may name the run inserted beside it.
 */
export async function insertChargedRun(
  db: Database, run: ChargedRunRow, costMilli: number, outbox?: { start: WorkflowStart; graceSeconds: number },
): Promise<{ startEvent: StoredRunEvent } | null> {
  const startPayload = { runId: run.runId, documentId: run.documentId };
  // The run's workflow start, recorded with it (shared/workflow-starts/outbox.ts); absent when a
  // parent workflow starts the run as its child (a scheduled run), which Temporal itself makes durable.
  const recordStart = outbox
    ? sql`, recorded_start AS (${insertWorkflowStart(outbox.start, { graceSeconds: outbox.graceSeconds, condition: sql`EXISTS (SELECT 1 FROM inserted_run)` })})`
    : sql``;
  const rows = await executePrepared(db, outbox ? 'insert_charged_run_and_start' : 'insert_charged_run', sql<{ start_event_id: string }>`
    WITH charged AS (
      UPDATE credit_balances SET balance_milli = balance_milli - ${costMilli}, updated_at = now()
      WHERE team_id = ${run.teamId} AND balance_milli >= ${costMilli}
      RETURNING team_id
    ), inserted_run AS (
      INSERT INTO runs (id, deployment_id, document_id, project_id, team_id, trigger_source, api_key_id, user_id, inputs, timeout_seconds)
      SELECT ${run.runId}::uuid, ${run.deploymentId}::uuid, ${run.documentId}::uuid, ${run.projectId}::uuid, team_id, ${run.triggerSource}::text, ${run.apiKeyId}::uuid, ${run.userId}::uuid,
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
    )${recordStart}
    SELECT id AS start_event_id FROM start_event
  `.compile(db));
  // bigserial arrives as a string from pg.
  return rows[0] ? { startEvent: { id: Number(rows[0].start_event_id), type: 'run_start', payload: startPayload } } : null;
}

/** How a run ends that its workflow did not end: never started, or no longer known to Temporal. */
export interface EndingWithoutWorkflow {
  /** Only while the start is still recorded and no dispatcher holds it: the requester withdrawing its own start. */
  withdraw: boolean;
  /** `runs.error` */
  error: string;
  /** `run_error.error` and `executionStatus` */
  message: string;
  executionStatus: string;
}

export const notStarted = (withdraw: boolean): EndingWithoutWorkflow =>
  ({ withdraw, error: 'not_started', message: 'The run could not be started', executionStatus: 'not_started' });

/**
 * Ends a run that no workflow will end, and refunds it when it never ran, in one statement
 * (docs/billing.md "Charges follow work"): the row becomes `failed`, `run_error` is appended, the
 * run's recorded start and its Idempotency-Key are removed (a client that retries gets a new run,
 * not this one), and when no event but `run_start` was ever written the `run:<runId>` charge is
 * reversed by a `run_refund` row (`refund:run:<runId>`: unique, so never twice) on the team
 * balance and the key's usage. A waiting run's pending approvals are cancelled with it (a decision
 * then gets 409). Returns whether this call ended the run.
 */
export async function endRunWithoutWorkflow(db: Database, runId: string, ending: EndingWithoutWorkflow): Promise<boolean> {
  const workflowId = workflowIds.appRun(runId);
  const payload = JSON.stringify({ runId, error: ending.message, executionStatus: ending.executionStatus });
  const [row] = await executePrepared(db, 'end_run_without_workflow', sql<{ ended: boolean; refunded: boolean }>`
    WITH released AS (
      DELETE FROM workflow_starts WHERE ${unclaimed(workflowId)}
      RETURNING 1
    ), ended AS (
      UPDATE runs SET status = 'failed', error = ${ending.error}::text, finished_at = now()
      WHERE id = ${runId}::uuid AND status IN ('running', 'waiting') AND (NOT ${ending.withdraw}::boolean OR EXISTS (SELECT 1 FROM released))
      RETURNING team_id, api_key_id
    ), forgotten_key AS (
      DELETE FROM run_idempotency_keys WHERE run_id = ${runId}::uuid AND EXISTS (SELECT 1 FROM ended)
    ), cancelled_approvals AS (
      UPDATE run_approvals SET status = 'cancelled', decided_at = now()
      WHERE run_id = ${runId}::uuid AND status = 'pending' AND EXISTS (SELECT 1 FROM ended)
    ), idle AS (
      SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM run_events WHERE run_id = ${runId}::uuid AND type <> 'run_start')
    ), refund AS (
      INSERT INTO credit_transactions (id, team_id, amount_milli, reason, reference, created_by)
      SELECT ${newId()}::uuid, t.team_id, -t.amount_milli, 'run_refund', ${`refund:run:${runId}`}::text, NULL
      FROM credit_transactions t JOIN ended ON ended.team_id = t.team_id
      WHERE t.reference = ${`run:${runId}`} AND EXISTS (SELECT 1 FROM idle)
      ON CONFLICT (team_id, reference) WHERE reference IS NOT NULL DO NOTHING
      RETURNING team_id, amount_milli
    ), balance AS (
      UPDATE credit_balances b SET balance_milli = b.balance_milli + refund.amount_milli, updated_at = now()
      FROM refund WHERE b.team_id = refund.team_id
    ), key_usage AS (
      UPDATE api_keys k SET usage_credits = k.usage_credits - refund.amount_milli
      FROM refund, ended WHERE k.id = ended.api_key_id
    ), terminal AS (
      INSERT INTO run_events (run_id, event_key, type, payload)
      SELECT ${runId}::uuid, 'run_error', 'run_error', ${payload}::jsonb FROM ended
      ON CONFLICT (run_id, event_key) DO NOTHING
      RETURNING 1
    ), notified AS (
      SELECT pg_notify(${RUN_EVENTS_CHANNEL}, ${runId}) WHERE EXISTS (SELECT 1 FROM terminal)
    )
    SELECT EXISTS (SELECT 1 FROM ended) AS ended, EXISTS (SELECT 1 FROM refund) AS refunded, (SELECT count(*) FROM notified) AS notified
  `.compile(db));
  return row?.ended === true;
}
