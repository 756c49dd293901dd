import { ApplicationFailure } from '@temporalio/common';
import { sql } from 'kysely';
import { parseRunnableGraph } from '../../shared/app-runs/graph-schema.js';
import type { RunPlan } from '../../shared/app-runs/run-plan.js';
import { eventRows } from '../../shared/app-runs/event-log.js';
import { RUN_EVENTS_CHANNEL } from '../../shared/app-runs/events.js';
import { executePrepared } from '../../shared/db/client.js';
import type { RunStatus } from '../../shared/db/types.js';
import { truncateLargeStrings } from '../../shared/app-runs/trace.js';
import type { KeyedRunEvent, RunOutcome } from '../../shared/app-runs/contracts.js';
import type { ActivityDeps } from '../deps.js';
import { resolveClaims, storeClaim } from './claim-store.js';

/**
 * Activities of the run workflow. Events are stored like shared/app-runs/event-log.ts stores them
 * (`type` in its column, the other fields in `payload`) and announced on NOTIFY `run_events` with
 * the run id, in the transaction that writes them.
 */
export function createAppRunActivities({ db }: Pick<ActivityDeps, 'db'>) {
  return {
    async loadRunPlan(runId: string): Promise<RunPlan> {
      const [row] = await executePrepared(db, 'load_run_plan', db.selectFrom('runs')
        .innerJoin('deployments', 'deployments.id', 'runs.deployment_id')
        .select(['runs.document_id', 'runs.inputs', 'deployments.snapshot'])
        .where('runs.id', '=', runId)
        .compile());
      if (!row) throw ApplicationFailure.nonRetryable(`run ${runId} does not exist`, 'RunNotFound');
      const graph = parseRunnableGraph(row.snapshot);
      if (!graph) throw ApplicationFailure.nonRetryable(`the published graph of run ${runId} does not validate`, 'InvalidGraph');
      // The plan is this activity's result, recorded in workflow history: large inputs travel as claims.
      const inputs: Record<string, unknown> = {};
      for (const [key, value] of Object.entries((row.inputs ?? {}) as Record<string, unknown>)) {
        inputs[key] = key === '_trigger' ? value : await storeClaim(db, runId, `input:${key}`, value);
      }
      return { documentId: row.document_id, graph, inputs };
    },

    /**
     * Appends one step's events. Idempotent: a retried call re-sends the same keys, which are ignored.
     * One statement: it takes a share lock on the run and appends nothing once the run is finished,
     * so no event ever follows the terminal one (`finishRun` updates the same row).
     */
    async appendRunEvents(input: { runId: string; events: KeyedRunEvent[] }): Promise<{ appended: number; runOpen: boolean }> {
      const { runId } = input;
      // Outputs may be claims: events carry the real values. Stored payloads never change, so this read needs no lock.
      const events = await resolveClaims(db, runId, input.events);
      const [row] = await executePrepared(db, 'append_run_events', sql<{ status: RunStatus | null; appended: number }>`
        WITH run AS (
          SELECT status FROM runs WHERE id = ${runId}::uuid FOR SHARE
        ), appended AS (
          INSERT INTO run_events (run_id, event_key, type, payload)
          SELECT ${runId}::uuid, e.key, e.type, e.payload FROM ${eventRows(events)}
          WHERE EXISTS (SELECT 1 FROM run WHERE status = 'running')
          ORDER BY e.ord
          ON CONFLICT (run_id, event_key) DO NOTHING
          RETURNING 1
        ), notified AS (
          SELECT pg_notify(${RUN_EVENTS_CHANNEL}, ${runId}) WHERE EXISTS (SELECT 1 FROM appended)
        )
        SELECT (SELECT status FROM run) AS status, (SELECT count(*) FROM appended)::int AS appended, (SELECT count(*) FROM notified) AS notified
      `.compile(db));
      if (!row?.status) throw ApplicationFailure.nonRetryable(`run ${runId} does not exist`, 'RunNotFound');
      return { appended: row.appended, runOpen: row.status === 'running' };
    },

    /**
     * Appends the walk's last events and the terminal one (`run_complete` or `run_error`) and makes
     * the `runs` row final, in one statement: a reader that sees the terminal event finds the row
     * final, and a run of pure blocks costs one write at its end. `duration` is measured by the
     * database clock from the row's creation. A no-op for a run that is already finished.
     */
    async finishRun(input: { runId: string; outcome: RunOutcome; events?: KeyedRunEvent[] }): Promise<{ status: RunStatus; finished: boolean }> {
      const { runId } = input;
      // Events, sessions and a traced run's globalCtx may hold claims: resolved first (stored payloads
      // never change), globalCtx truncated the way shared/app-runs/trace.ts truncates the values it holds.
      const events = await resolveClaims(db, runId, input.events ?? []);
      const outcome: RunOutcome = input.outcome.status === 'completed'
        ? {
            ...input.outcome,
            sessions: await resolveClaims(db, runId, input.outcome.sessions),
            ...(input.outcome.globalCtx ? { globalCtx: await resolveClaims(db, runId, input.outcome.globalCtx, truncateLargeStrings) } : {}),
          }
        : input.outcome;
      const completed = outcome.status === 'completed';
      // run_complete's payload gets `duration` from the database; it is also the row's `result`.
      const terminal = completed
        ? { type: 'run_complete' as const, payload: { runId, sessions: outcome.sessions, completedBlocks: outcome.completedBlocks, ...(outcome.globalCtx ? { globalCtx: outcome.globalCtx } : {}) } }
        : { type: 'run_error' as const, payload: { runId, error: outcome.error, executionStatus: outcome.status } };
      const terminalPayload = JSON.stringify(terminal.payload);
      const [row] = await executePrepared(db, 'finish_run', sql<{ finished: boolean }>`
        WITH finished AS (
          UPDATE runs SET
            status = ${outcome.status},
            result = CASE WHEN ${completed}::boolean THEN ${terminalPayload}::jsonb
              || jsonb_build_object('duration', greatest(0, round(extract(epoch from clock_timestamp() - created_at) * 1000))::bigint) END,
            error = ${completed ? null : outcome.error}::text,
            finished_at = now()
          WHERE id = ${runId}::uuid AND status = 'running'
          RETURNING coalesce(result, ${terminalPayload}::jsonb) AS terminal_payload
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
          RETURNING 1
        ), notified AS (
          SELECT pg_notify(${RUN_EVENTS_CHANNEL}, ${runId}) WHERE EXISTS (SELECT 1 FROM appended)
        )
        SELECT EXISTS (SELECT 1 FROM finished) AS finished, (SELECT count(*) FROM notified) AS notified
      `.compile(db));
      if (row?.finished) return { status: outcome.status, finished: true };
      const run = await db.selectFrom('runs').select('status').where('id', '=', runId).executeTakeFirst();
      if (!run) throw ApplicationFailure.nonRetryable(`run ${runId} does not exist`, 'RunNotFound');
      return { status: run.status as RunStatus, finished: false };
    },
  };
}

export type AppRunActivities = ReturnType<typeof createAppRunActivities>;
