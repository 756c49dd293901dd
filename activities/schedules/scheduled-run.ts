import { runResultOf } from '../../shared/app-runs/run-result.js';
import { findLiveRunDeployment } from '../../shared/documents/deployments-repository.js';
import { findTerminalEvent } from '../../shared/app-runs/run-events-repository.js';
import { findRunOutcome, findRunTimeoutSeconds } from '../../shared/app-runs/runs-repository.js';
import { admitRun, type AdmittedRun } from '../../shared/app-runs/run-service.js';
import type { AppRunInput } from '../../shared/app-runs/contracts.js';
import type { RunStatus, ScheduleLogStatus } from '../../shared/db/types.js';
import { AppError } from '../../shared/errors.js';
import { sha256Hex } from '../../shared/crypto.js';
import type { FinishedAttempt, ScheduledAttempt, ScheduledAttemptRequest } from '../../shared/schedules/contracts.js';
import { findScheduleById, finishAttemptLog, insertRefusedAttemptLog, insertRunningAttemptLog } from '../../shared/schedules/repository.js';
import type { ActivityDeps } from '../deps.js';

const logStatusOf: Record<RunStatus, ScheduleLogStatus> = {
  running: 'running', waiting: 'running', completed: 'success', failed: 'failed', timed_out: 'timed_out', cancelled: 'cancelled',
};

/**
 * Activities of the scheduled-run workflow. A scheduled run goes through the same pipeline as an
 * API run (`admitRun`: limits, timeout cap, input validation, credits, the runs row, run_start) with a schedule
 * identity, and every attempt has a schedule log row, refused ones included.
 */
export function createScheduledRunActivities({ db, settings }: Pick<ActivityDeps, 'db' | 'settings'>) {
  async function writeRefusal(request: ScheduledAttemptRequest, schedule: { project_id: string }, error: string): Promise<ScheduledAttempt> {
    await insertRefusedAttemptLog(db, { id: request.logId, scheduleId: request.scheduleId, projectId: schedule.project_id, scheduledAt: request.scheduledAt, error });
    return { kind: 'refused', error };
  }

  return {
    async startScheduledRunAttempt(request: ScheduledAttemptRequest): Promise<ScheduledAttempt> {
      const schedule = await findScheduleById(db, request.scheduleId);
      if (!schedule || schedule.deleted_at) return { kind: 'skipped', reason: 'task does not exist' };
      // Paused in the row but the Temporal Schedule fired before it caught up: not a run.
      if (!schedule.enabled && !request.manual) return { kind: 'skipped', reason: 'task is disabled' };
      if (!schedule.deployment_id) return writeRefusal(request, schedule, 'task has no deployment');
      const deployment = await findLiveRunDeployment(db, schedule.deployment_id);
      if (!deployment) return writeRefusal(request, schedule, 'Deployment not found');
      const inputs = schedule.trigger_config.inputs;
      let admitted: AdmittedRun;
      try {
        // The run path of every run (run-service.ts); this starter starts the workflow itself, as a child.
        admitted = await admitRun({ db, settings }, {
          target: { deployment },
          caller: { kind: 'schedule', scheduleId: schedule.id, teamId: schedule.team_id, deploymentId: deployment.id },
          inputs: typeof inputs === 'object' && inputs !== null && !Array.isArray(inputs) ? inputs as Record<string, unknown> : {},
          timeoutSeconds: schedule.timeout_ms / 1000,
          // A retried activity finds the run it already recorded instead of charging twice.
          idempotency: { key: request.attemptKey, requestHash: sha256Hex(request.attemptKey) },
        });
      } catch (error) {
        // A refusal is the attempt's outcome, in its log row; it would be the same on a retry.
        if (error instanceof AppError) return writeRefusal(request, schedule, error.message);
        throw error;
      }
      const { runId } = admitted;
      // A retried activity gets the run its first try recorded (an idempotent replay): the child's input from its row.
      const workflowInput: AppRunInput = admitted.workflowInput ?? {
        runId, trace: false, finishBySink: true,
        timeoutSeconds: await findRunTimeoutSeconds(db, runId),
      };
      await insertRunningAttemptLog(db, { id: request.logId, scheduleId: schedule.id, projectId: schedule.project_id, scheduledAt: request.scheduledAt, runId });
      return { kind: 'started', runId, workflowInput, ...(admitted.startOptions ? { startOptions: admitted.startOptions } : {}), maxRetries: request.manual ? 0 : schedule.max_retries };
    },

    /** Reads the run's outcome and closes its log row. */
    async finishScheduledRunAttempt(request: { logId: string; runId: string }): Promise<FinishedAttempt> {
      const run = await findRunOutcome(db, request.runId);
      const terminal = await findTerminalEvent(db, request.runId);
      const result = runResultOf(request.runId, run.document_id, terminal);
      // A run still marked running here was ended by the workflow engine without its final write.
      const status = run.status === 'running' || run.status === 'waiting' ? 'failed' : logStatusOf[run.status];
      const error = status === 'success' ? null : String(result.error ?? run.error ?? 'The run did not complete');
      await finishAttemptLog(db, request.logId, { status, error, result });
      return { status, error, result };
    },
  };
}
