import { sql } from 'kysely';
import type { StoredRunEvent } from '../../shared/app-runs/event-log.js';
import { runResultOf } from '../../shared/app-runs/run-result.js';
import { findLiveRunDeployment, recordRun } from '../../shared/app-runs/run-service.js';
import type { RunStatus, ScheduleLogStatus } from '../../shared/db/types.js';
import { AppError } from '../../shared/errors.js';
import { sha256Hex } from '../../shared/crypto.js';
import type { FinishedAttempt, ScheduledAttempt, ScheduledAttemptRequest } from '../../shared/schedules/contracts.js';
import type { ActivityDeps } from '../deps.js';

const logStatusOf: Record<RunStatus, ScheduleLogStatus> = {
  running: 'running', completed: 'success', failed: 'failed', timed_out: 'timed_out', cancelled: 'cancelled',
};

/**
 * Activities of the scheduled-run workflow. A scheduled run goes through the same pipeline as an
 * API run (`recordRun`: input validation, credits, the runs row, run_start) with a schedule
 * identity, and every attempt has a schedule log row, refused ones included.
 */
export function createScheduledRunActivities({ db, settings }: Pick<ActivityDeps, 'db' | 'settings'>) {
  async function writeRefusal(request: ScheduledAttemptRequest, schedule: { project_id: string }, error: string): Promise<ScheduledAttempt> {
    await db.insertInto('schedule_logs').values({
      id: request.logId, schedule_id: request.scheduleId, project_id: schedule.project_id, status: 'failed',
      scheduled_at: request.scheduledAt, started_at: sql`now()` as never, finished_at: sql`now()` as never, error, result: JSON.stringify({}),
    }).onConflict((oc) => oc.column('id').doNothing()).execute();
    return { kind: 'refused', error };
  }

  return {
    async startScheduledRunAttempt(request: ScheduledAttemptRequest): Promise<ScheduledAttempt> {
      const schedule = await db.selectFrom('schedules').selectAll().where('id', '=', request.scheduleId).executeTakeFirst();
      if (!schedule || schedule.deleted_at) return { kind: 'skipped', reason: 'task does not exist' };
      // Paused in the row but the Temporal Schedule fired before it caught up: not a run.
      if (!schedule.enabled && !request.manual) return { kind: 'skipped', reason: 'task is disabled' };
      if (!schedule.deployment_id) return writeRefusal(request, schedule, 'task has no deployment');
      const deployment = await findLiveRunDeployment(db, schedule.deployment_id);
      if (!deployment) return writeRefusal(request, schedule, 'Deployment not found');
      const maxTimeoutSeconds = await settings.get('run.max_timeout_seconds');
      const timeoutSeconds = Math.min(schedule.timeout_ms / 1000, maxTimeoutSeconds);
      const inputs = schedule.trigger_config.inputs;
      let runId: string;
      try {
        ({ runId } = await recordRun({ db, settings }, {
          deployment,
          caller: { kind: 'schedule', scheduleId: schedule.id, teamId: schedule.team_id, deploymentId: deployment.id },
          inputs: typeof inputs === 'object' && inputs !== null && !Array.isArray(inputs) ? inputs as Record<string, unknown> : {},
          trace: false, timeoutSeconds,
          // A retried activity finds the run it already recorded instead of charging twice.
          idempotency: { key: request.attemptKey, requestHash: sha256Hex(request.attemptKey) },
        }));
      } catch (error) {
        if (error instanceof AppError && error.status < 500) return writeRefusal(request, schedule, error.message);
        throw error;
      }
      await db.insertInto('schedule_logs').values({
        id: request.logId, schedule_id: schedule.id, project_id: schedule.project_id, run_id: runId, status: 'running',
        scheduled_at: request.scheduledAt, started_at: sql`now()` as never, result: JSON.stringify({ runId }),
      }).onConflict((oc) => oc.column('id').doNothing()).execute();
      return { kind: 'started', runId, timeoutSeconds, maxRetries: request.manual ? 0 : schedule.max_retries };
    },

    /** Reads the run's outcome and closes its log row. */
    async finishScheduledRunAttempt(request: { logId: string; runId: string }): Promise<FinishedAttempt> {
      const run = await db.selectFrom('runs').select(['status', 'document_id', 'error']).where('id', '=', request.runId).executeTakeFirstOrThrow();
      const terminal = await db.selectFrom('run_events').select(['id', 'type', 'payload'])
        .where('run_id', '=', request.runId).where('type', 'in', ['run_complete', 'run_error'])
        .orderBy('id', 'desc').limit(1).executeTakeFirst() as StoredRunEvent | undefined;
      const result = runResultOf(request.runId, run.document_id, terminal);
      // A run still marked running here was ended by the workflow engine without its final write.
      const status = run.status === 'running' ? 'failed' : logStatusOf[run.status];
      const error = status === 'success' ? null : String(result.error ?? run.error ?? 'The run did not complete');
      await db.updateTable('schedule_logs')
        .set({ status, error, result: JSON.stringify(result), finished_at: sql`now()` as never })
        .where('id', '=', request.logId).execute();
      return { status, error, result };
    },
  };
}
