import { ScheduleNotFoundError, type Client } from '@temporalio/client';
import { startPeriodic } from '../periodic.js';
import type { Database } from '../db/client.js';
import { taskQueueName } from '../../temporal/task-queues.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import { findScheduleForTemporal, listLiveScheduleIds } from './repository.js';
import { desiredSchedule, type ScheduleRowForTemporal } from './temporal-spec.js';

// PostgreSQL holds the schedule rows; Temporal runs them. These functions make Temporal match the
// rows, one schedule at a time (after each API write) or all at once (the reconciler).

export interface ScheduleSyncTarget {
  client: Client;
  /** Test files and side-by-side deployments use their own task queues (and only touch their own schedules). */
  taskQueueSuffix?: string;
}

export type SyncOutcome = 'created' | 'updated' | 'deleted' | 'unchanged';

function optionsFor(row: ScheduleRowForTemporal, target: ScheduleSyncTarget) {
  return desiredSchedule(row, {
    scheduleId: workflowIds.schedule(row.id),
    workflowId: workflowIds.scheduledRun(row.id),
    taskQueue: taskQueueName('appRuns', target.taskQueueSuffix),
  });
}

/** Brings one Temporal Schedule in line with its row (read fresh, so racing writers converge on the last). */
export async function syncSchedule(db: Database, target: ScheduleSyncTarget, scheduleId: string): Promise<SyncOutcome> {
  const row = await findScheduleForTemporal(db, scheduleId);
  const handle = target.client.schedule.getHandle(workflowIds.schedule(scheduleId));
  if (!row || row.deleted_at) {
    try {
      await handle.delete();
      return 'deleted';
    } catch (error) {
      if (error instanceof ScheduleNotFoundError) return 'unchanged';
      throw error;
    }
  }
  const desired = optionsFor(row, target);
  let current;
  try {
    current = await handle.describe();
  } catch (error) {
    if (!(error instanceof ScheduleNotFoundError)) throw error;
    await target.client.schedule.create(desired);
    return 'created';
  }
  if (current.state.note === desired.state?.note && current.state.paused === desired.state?.paused) return 'unchanged';
  await handle.update(() => ({ spec: desired.spec, action: desired.action, policies: desired.policies, state: { paused: desired.state?.paused, note: desired.state?.note } }));
  return 'updated';
}

/**
 * Makes every Temporal Schedule of this task queue match the rows: creates missing ones, updates
 * changed or tampered ones, deletes those whose row is gone or soft-deleted. Returns the counts.
 */
export async function reconcileSchedules(db: Database, target: ScheduleSyncTarget): Promise<Record<SyncOutcome, number>> {
  const counts: Record<SyncOutcome, number> = { created: 0, updated: 0, deleted: 0, unchanged: 0 };
  const live = await listLiveScheduleIds(db);
  const liveIds = new Set(live.map((r) => r.id));
  for (const { id } of live) counts[await syncSchedule(db, target, id)] += 1;
  // Orphans: schedules of our task queue with no live row (listing is eventually consistent, so a
  // just-deleted one may still show up; deleting again is harmless).
  const ourQueue = taskQueueName('appRuns', target.taskQueueSuffix);
  for await (const summary of target.client.schedule.list()) {
    const scheduleId = summary.scheduleId;
    if (!scheduleId.startsWith('schedule-') || summary.memo?.taskQueue !== ourQueue) continue;
    const rowId = scheduleId.slice('schedule-'.length);
    if (liveIds.has(rowId)) continue;
    if ((await syncSchedule(db, target, rowId)) === 'deleted') counts.deleted += 1;
  }
  return counts;
}

/** Runs the reconciler now and then every `intervalMs`; failures are reported and retried next time. */
export function startScheduleReconciler(db: Database, target: ScheduleSyncTarget, options: { intervalMs: number; log: (message: string) => void }) {
  return startPeriodic(async () => {
    const c = await reconcileSchedules(db, target);
    if (c.created + c.updated + c.deleted > 0) options.log(`schedules reconciled: ${JSON.stringify(c)}`);
  }, { intervalMs: options.intervalMs, onError: (error) => options.log(`schedule reconciler failed, will retry: ${error.message}`) });
}
