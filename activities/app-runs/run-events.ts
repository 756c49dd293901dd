import { ApplicationFailure } from '@temporalio/common';
import { parseRunnableGraph } from '../../shared/documents/graph-schema.js';
import type { RunPlan } from '../../shared/app-runs/run-plan.js';
import { appendWhileRunning, finishRunWithEvents, type RunEnding } from '../../shared/app-runs/run-events-repository.js';
import { executePrepared, type Database } from '../../shared/db/client.js';
import type { RunStatus } from '../../shared/db/types.js';
import { truncateLargeStrings } from '../../shared/app-runs/trace.js';
import type { FinishRunInput, KeyedRunEvent } from '../../shared/app-runs/contracts.js';
import type { ActivityDeps } from '../deps.js';
import { resolveClaims, storeClaim } from './claim-store.js';

/**
 * Activities of the run workflow: its plan, its events and its end. Every write of the run's log
 * goes through shared/app-runs/run-events-repository.ts.
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
     * Appends nothing once the run is finished (`runOpen: false`), so no event follows the terminal one.
     */
    async appendRunEvents(input: { runId: string; events: KeyedRunEvent[] }): Promise<{ appended: number; runOpen: boolean }> {
      const { runId } = input;
      // Outputs may be claims: events carry the real values. Stored payloads never change, so this read needs no lock.
      const appended = await appendWhileRunning(db, runId, await resolveClaims(db, runId, input.events));
      if (!appended) throw ApplicationFailure.nonRetryable(`run ${runId} does not exist`, 'RunNotFound');
      return appended;
    },

    /**
     * The run's final write as a local activity: how runs started before `finishBySink` existed end
     * (their histories replay through it). Newer runs end through the `appRuns.finish` sink (finish-sink.ts).
     */
    finishRun: (input: FinishRunInput): Promise<{ status: RunStatus; finished: boolean }> => finishAppRun(db, input),
  };
}

/**
 * Writes the walk's last events and the terminal one (`run_complete` or `run_error`) together with
 * the final `runs` row: a run of pure blocks costs one write at its end. A no-op for a run that is
 * already finished, which then reports the row's status. A failed run's `run_error` carries the
 * sessions of its blocks (spec §2.20), the failed block's with `status: 'error'`.
 */
export async function finishAppRun(db: Database, input: FinishRunInput): Promise<{ status: RunStatus; finished: boolean }> {
  const { runId, outcome } = input;
  // Events, sessions and a traced run's globalCtx may hold claims: resolved first (stored payloads
  // never change), globalCtx truncated the way shared/app-runs/trace.ts truncates the values it holds.
  const events = await resolveClaims(db, runId, input.events ?? []);
  const sessions = outcome.sessions ? await resolveClaims(db, runId, outcome.sessions) : undefined;
  const ending: RunEnding = outcome.status === 'completed'
    ? {
        status: 'completed', error: null,
        terminal: {
          type: 'run_complete',
          payload: {
            runId, sessions, completedBlocks: outcome.completedBlocks,
            ...(outcome.globalCtx ? { globalCtx: await resolveClaims(db, runId, outcome.globalCtx, truncateLargeStrings) } : {}),
          },
        },
      }
    : {
        status: outcome.status, error: outcome.error,
        terminal: { type: 'run_error', payload: { runId, error: outcome.error, executionStatus: outcome.status, ...(sessions ? { sessions } : {}) } },
      };
  if (await finishRunWithEvents(db, runId, ending, events)) return { status: outcome.status, finished: true };
  const run = await db.selectFrom('runs').select('status').where('id', '=', runId).executeTakeFirst();
  if (!run) throw ApplicationFailure.nonRetryable(`run ${runId} does not exist`, 'RunNotFound');
  return { status: run.status as RunStatus, finished: false };
}

export type AppRunActivities = ReturnType<typeof createAppRunActivities>;
