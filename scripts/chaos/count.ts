// Counting, once the kills are over and the stack has settled: what the database and Temporal say
// happened to every run of the chaos deployment, set against what the clients saw. The figures
// the goal names (lost, charged twice, charged for nothing, stream gaps) are computed here.
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { sql } from 'kysely';
import type { Database } from '../../shared/db/client.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import type { RequestRecord } from './drive.js';
import { TERMINAL_TYPES } from './sse.js';

/** Errors with which the service ends a run no workflow ended (shared/app-runs/run-reconciler.ts): their run_error is not work. */
const ENDED_WITHOUT_WORKFLOW = ['not_started', 'workflow_lost', 'workflow_ended'];
/** An event stored this long before a stream gave up waiting should have reached it. */
const STALL_GRACE_MS = 2_000;

interface RunRow {
  id: string; status: string; error: string | null; tag: string | null;
  charge_rows: string; charged: string; refunded: string; work_events: string;
}

export interface RunCounts {
  accepted: number;
  completed: number;
  /** Withdrawn before starting (failed, not_started): the other half of "refused". */
  withdrawn: number;
  /** Ended otherwise (failed, timed out, cancelled), by `status: error`. */
  endedOtherwise: Record<string, number>;
  /** A few run ids per way of ending otherwise, to look them up. */
  endedOtherwiseRuns: Record<string, string[]>;
  lost: string[];
  chargedTwice: string[];
  chargedWithoutRunning: Array<{ runId: string; why: string }>;
  /** A client was told 503 without a run id (so: nothing charged) but a run was made for it and charged. */
  refusedButCharged: Array<{ runId: string; tag: string; mode: string; at: string; detail?: string }>;
  /** 503 answers that named a run (x-run-id): the client can follow it; its run must still end (see lost). */
  refusedNamingRun: Array<{ runId: string; mode: string; runStatus: string }>;
  /** SSE streams whose ids differ from the run's events: skipped, repeated, out of order, or no terminal event. */
  streamViolations: Array<{ runId: string; missing: number[]; repeated: number[]; extra: number[]; outOfOrder: boolean; terminal: boolean }>;
  streamsChecked: number;
  /**
   * Streams that went silent although the run had an event for them stored well before (2 s): the
   * live stream missed it (a lost notification?). The resume delivered it, so it is no gap, but a
   * client without a silence timeout would have waited forever.
   */
  stalledStreams: Array<{ runId: string; lastId: number | null; waitingEventId: number; storedAt: string; givenUpAt: string }>;
  /** JSON answers whose `status` differs from the run row's final status. */
  jsonStatusMismatches: Array<{ runId: string; answered: string | undefined; recorded: string }>;
  /** Workflows we could not describe (Temporal errors other than not-found). */
  describeErrors: number;
}

/** 'NOT_FOUND', the execution status name, or 'UNKNOWN' when Temporal did not answer. */
async function workflowStatus(client: Client, runId: string): Promise<string> {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return (await client.workflow.getHandle(workflowIds.appRun(runId)).describe()).status.name;
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return 'NOT_FOUND';
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
  return 'UNKNOWN';
}

/** Maps over `items` with at most `parallel` calls in flight. */
async function mapLimited<T, R>(items: T[], parallel: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(parallel, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index]!);
    }
  }));
  return results;
}

/** Compares the ids a stream received (across resumes) with the run's stored events. */
export function checkStream(received: Array<{ id: number; type: string }>, stored: Array<{ id: number; type: string }>) {
  const storedIds = new Set(stored.map((e) => e.id));
  const seen = new Set<number>();
  const repeated: number[] = [];
  for (const { id } of received) {
    if (seen.has(id)) repeated.push(id);
    seen.add(id);
  }
  const missing = stored.filter((e) => !seen.has(e.id)).map((e) => e.id);
  const extra = [...seen].filter((id) => !storedIds.has(id));
  const outOfOrder = received.some((e, i) => i > 0 && e.id <= received[i - 1]!.id);
  const last = received.at(-1);
  const terminal = !!last && TERMINAL_TYPES.has(last.type) && last.id === stored.at(-1)?.id;
  return { missing, repeated, extra, outOfOrder, terminal, ok: !missing.length && !repeated.length && !extra.length && !outOfOrder && terminal };
}

export async function countRuns(options: {
  db: Database; temporalAddress: string; namespace?: string; deploymentId: string; runBaseMilli: number; records: RequestRecord[];
}): Promise<RunCounts> {
  const { db, deploymentId, runBaseMilli, records } = options;
  const { rows } = await sql<RunRow>`
    SELECT r.id, r.status, r.error, r.inputs->>'tag' AS tag,
      (SELECT count(*) FROM credit_transactions t WHERE t.reason = 'run' AND t.reference = 'run:' || r.id::text) AS charge_rows,
      (SELECT coalesce(sum(t.amount_milli), 0) FROM credit_transactions t WHERE t.reason = 'run' AND t.reference = 'run:' || r.id::text) AS charged,
      (SELECT coalesce(sum(t.amount_milli), 0) FROM credit_transactions t WHERE t.reason = 'run_refund' AND t.reference = 'refund:run:' || r.id::text) AS refunded,
      (SELECT count(*) FROM run_events e WHERE e.run_id = r.id AND e.type <> 'run_start'
        AND NOT (e.type = 'run_error' AND coalesce(r.error, '') = ANY(${ENDED_WITHOUT_WORKFLOW}::text[]))) AS work_events
    FROM runs r WHERE r.deployment_id = ${deploymentId}::uuid ORDER BY r.created_at`.execute(db);
  const { rows: events } = await sql<{ run_id: string; id: string; type: string; created_at: Date }>`
    SELECT e.run_id, e.id, e.type, e.created_at FROM run_events e JOIN runs r ON r.id = e.run_id
    WHERE r.deployment_id = ${deploymentId}::uuid ORDER BY e.run_id, e.id`.execute(db);
  const eventsByRun = new Map<string, Array<{ id: number; type: string; createdAt: number }>>();
  for (const e of events) {
    const list = eventsByRun.get(e.run_id) ?? [];
    list.push({ id: Number(e.id), type: e.type, createdAt: new Date(e.created_at).getTime() });
    eventsByRun.set(e.run_id, list);
  }

  const counts: RunCounts = {
    accepted: rows.length, completed: 0, withdrawn: 0, endedOtherwise: {}, endedOtherwiseRuns: {}, lost: [], chargedTwice: [], chargedWithoutRunning: [],
    refusedButCharged: [], refusedNamingRun: [], streamViolations: [], streamsChecked: 0, stalledStreams: [], jsonStatusMismatches: [], describeErrors: 0,
  };
  const net = (row: RunRow) => Number(row.charged) + Number(row.refunded);
  for (const row of rows) {
    if (row.status === 'completed') counts.completed += 1;
    else if (row.status === 'running') counts.lost.push(row.id);
    else if (row.status === 'failed' && row.error === 'not_started') counts.withdrawn += 1;
    else {
      const why = `${row.status}: ${row.error ?? '-'}`;
      counts.endedOtherwise[why] = (counts.endedOtherwise[why] ?? 0) + 1;
      const examples = (counts.endedOtherwiseRuns[why] ??= []);
      if (examples.length < 3) examples.push(row.id);
    }
    if (Number(row.charge_rows) > 1 || Number(row.charged) < -runBaseMilli) counts.chargedTwice.push(row.id);
    if (net(row) !== 0 && Number(row.work_events) === 0) counts.chargedWithoutRunning.push({ runId: row.id, why: 'no event besides run_start' });
  }

  // Charged runs whose workflow Temporal never had: charged for nothing, whatever the events say.
  const connection = await Connection.connect({ address: options.temporalAddress, connectTimeout: 10_000 });
  try {
    const client = new Client({ connection, namespace: options.namespace ?? 'default' });
    const charged = rows.filter((row) => net(row) !== 0 && Number(row.work_events) > 0);
    const statuses = await mapLimited(charged, 8, (row) => workflowStatus(client, row.id));
    charged.forEach((row, i) => {
      if (statuses[i] === 'NOT_FOUND') counts.chargedWithoutRunning.push({ runId: row.id, why: 'no Temporal workflow' });
      if (statuses[i] === 'UNKNOWN') counts.describeErrors += 1;
    });
  } finally {
    await connection.close();
  }

  const runsById = new Map(rows.map((row) => [row.id, row]));
  const runsByTag = new Map(rows.filter((row) => row.tag).map((row) => [row.tag!, row]));
  for (const record of records) {
    const run = runsByTag.get(record.tag);
    if (record.outcome === 'refused' && record.runId) {
      counts.refusedNamingRun.push({ runId: record.runId, mode: record.mode, runStatus: runsById.get(record.runId)?.status ?? 'missing' });
    }
    else if (record.outcome === 'refused' && run && net(run) !== 0) {
      counts.refusedButCharged.push({ runId: run.id, tag: record.tag, mode: record.mode, at: new Date(record.startedAt).toISOString(), detail: record.detail });
    }
    if (record.mode === 'json' && record.outcome === 'ok' && record.runId) {
      const recorded = runsById.get(record.runId)?.status ?? 'missing';
      if (recorded !== record.resultStatus) counts.jsonStatusMismatches.push({ runId: record.runId, answered: record.resultStatus, recorded });
    }
    for (const idle of record.idleAt) {
      const waiting = (eventsByRun.get(record.runId ?? '') ?? []).find((e) => e.id > (idle.lastId ?? 0) && e.createdAt < idle.at - STALL_GRACE_MS);
      if (waiting) {
        counts.stalledStreams.push({
          runId: record.runId!, lastId: idle.lastId, waitingEventId: waiting.id, storedAt: new Date(waiting.createdAt).toISOString(), givenUpAt: new Date(idle.at).toISOString(),
        });
      }
    }
    // Streams that never reached their end are failures of their own (drive.ts); the others must be exact.
    if (record.mode === 'sse' && record.runId && record.terminal) {
      counts.streamsChecked += 1;
      const check = checkStream(record.frames, eventsByRun.get(record.runId) ?? []);
      if (!check.ok) {
        counts.streamViolations.push({ runId: record.runId, missing: check.missing, repeated: check.repeated, extra: check.extra, outOfOrder: check.outOfOrder, terminal: check.terminal });
      }
    }
  }
  return counts;
}
