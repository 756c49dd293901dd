import { ApplicationFailure } from '@temporalio/common';
import { sql, type Transaction } from 'kysely';
import { parseRunnableGraph } from '../../shared/app-runs/graph-schema.js';
import type { Graph } from '../../shared/app-runs/graph.js';
import { RUN_EVENTS_CHANNEL, type RunEvent, type Session } from '../../shared/app-runs/events.js';
import type { DB, RunStatus } from '../../shared/db/types.js';
import { truncateLargeStrings } from '../../workflows/app-runs/trace.js';
import type { ActivityDeps } from '../deps.js';
import { resolveClaims, storeClaim } from './claim-store.js';

/** What the run workflow needs from PostgreSQL: the published graph and the validated inputs. */
export interface RunPlan {
  documentId: string;
  graph: Graph;
  /** Already validated by the API, with `_trigger` set; values over the claim threshold are claims (`input:<name>`). */
  inputs: Record<string, unknown>;
}

/** An event with its idempotency key, unique per run (`<blockId>:block_start`, `run_complete`, …). */
export interface KeyedRunEvent {
  key: string;
  event: RunEvent;
}

export type RunOutcome =
  | { status: 'completed'; sessions: Session[]; completedBlocks: number; globalCtx?: Record<string, unknown> }
  | { status: 'failed' | 'timed_out' | 'cancelled'; error: string };

async function insertEvents(trx: Transaction<DB>, runId: string, events: KeyedRunEvent[]): Promise<number> {
  let appended = 0;
  // One statement per event, in order, so the bigserial ids follow the order of the events.
  for (const { key, event } of events) {
    const { type, ...payload } = event;
    const result = await trx.insertInto('run_events')
      .values({ run_id: runId, event_key: key, type, payload: JSON.stringify(payload) })
      .onConflict((oc) => oc.columns(['run_id', 'event_key']).doNothing())
      .executeTakeFirst();
    appended += Number(result.numInsertedOrUpdatedRows ?? 0);
  }
  if (appended > 0) await sql`SELECT pg_notify(${RUN_EVENTS_CHANNEL}, ${runId})`.execute(trx);
  return appended;
}

/**
 * Activities of the run workflow. Events are stored like shared/app-runs/event-log.ts stores them
 * (`type` in its column, the other fields in `payload`) and announced on NOTIFY `run_events` with
 * the run id, in the transaction that writes them.
 */
export function createAppRunActivities({ db }: Pick<ActivityDeps, 'db'>) {
  return {
    async loadRunPlan(runId: string): Promise<RunPlan> {
      const row = await db.selectFrom('runs')
        .innerJoin('deployments', 'deployments.id', 'runs.deployment_id')
        .select(['runs.document_id', 'runs.inputs', 'deployments.snapshot'])
        .where('runs.id', '=', runId)
        .executeTakeFirst();
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
     * Takes a share lock on the run and appends nothing once the run is finished, so no event ever
     * follows the terminal one (`finishRun` takes the same row lock).
     */
    async appendRunEvents(input: { runId: string; events: KeyedRunEvent[] }): Promise<{ appended: number; runOpen: boolean }> {
      return db.transaction().execute(async (trx) => {
        const run = await trx.selectFrom('runs').select('status').where('id', '=', input.runId).forShare().executeTakeFirst();
        if (!run) throw ApplicationFailure.nonRetryable(`run ${input.runId} does not exist`, 'RunNotFound');
        if (run.status !== 'running') return { appended: 0, runOpen: false };
        // Outputs may be claims: events carry the real values.
        const events = await resolveClaims(db, input.runId, input.events);
        return { appended: await insertEvents(trx, input.runId, events), runOpen: true };
      });
    },

    /**
     * Appends the terminal event (`run_complete` or `run_error`) and makes the `runs` row final in one
     * transaction, so a reader that sees the terminal event finds the row final. `duration` is measured
     * by the database clock from the row's creation. A no-op for a run that is already finished.
     */
    async finishRun(input: { runId: string; outcome: RunOutcome }): Promise<{ status: RunStatus; finished: boolean }> {
      return db.transaction().execute(async (trx) => {
        const run = await trx.selectFrom('runs')
          .select(['status', sql<number>`round(extract(epoch from clock_timestamp() - created_at) * 1000)::float8`.as('elapsed_ms')])
          .where('id', '=', input.runId)
          .forUpdate()
          .executeTakeFirst();
        if (!run) throw ApplicationFailure.nonRetryable(`run ${input.runId} does not exist`, 'RunNotFound');
        if (run.status !== 'running') return { status: run.status, finished: false };

        // Sessions' outputs may be claims; a traced run's globalCtx gets the resolved values truncated
        // the way workflows/app-runs/trace.ts truncates the ones it holds.
        const outcome: RunOutcome = input.outcome.status === 'completed'
          ? {
              ...input.outcome,
              sessions: await resolveClaims(trx, input.runId, input.outcome.sessions),
              ...(input.outcome.globalCtx ? { globalCtx: await resolveClaims(trx, input.runId, input.outcome.globalCtx, truncateLargeStrings) } : {}),
            }
          : input.outcome;
        const event: RunEvent = outcome.status === 'completed'
          ? {
              type: 'run_complete', runId: input.runId, sessions: outcome.sessions, completedBlocks: outcome.completedBlocks,
              duration: Math.max(0, Math.round(run.elapsed_ms)), ...(outcome.globalCtx ? { globalCtx: outcome.globalCtx } : {}),
            }
          : { type: 'run_error', runId: input.runId, error: outcome.error, executionStatus: outcome.status };
        await insertEvents(trx, input.runId, [{ key: event.type, event }]);
        const { type, ...payload } = event;
        await trx.updateTable('runs')
          .set({
            status: outcome.status,
            // The result is the run_complete event's payload, exactly as stored in run_events.
            result: type === 'run_complete' ? JSON.stringify(payload) : null,
            error: outcome.status === 'completed' ? null : outcome.error,
            finished_at: sql<Date>`now()`,
          })
          .where('id', '=', input.runId)
          .execute();
        return { status: outcome.status, finished: true };
      });
    },
  };
}

export type AppRunActivities = ReturnType<typeof createAppRunActivities>;
