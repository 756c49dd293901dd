import type { CalendarSpec, ScheduleOptions, ScheduleOverlapPolicy } from '@temporalio/client';
import { DAYS_OF_WEEK, MONTHS } from '@temporalio/client';
import { sha256Hex } from '../crypto.js';
import { SCHEDULED_FIRE_TASK_TIMEOUT } from '../../temporal/activity-options.js';
import { scheduledRunSummary, workflowSearchAttributes } from '../../temporal/search-attributes.js';
import { parseCron, toRanges } from './cron.js';

/**
 * What Temporal needs of a schedule row; everything else is read from the row at fire time. Team,
 * project, deployment and name only label the runs (search attributes and summary in the UI).
 */
export interface ScheduleRowForTemporal {
  id: string; cron_expression: string; timezone: string; enabled: boolean;
  team_id: string; project_id: string; deployment_id: string | null; name: string;
}

/**
 * Overlap: a fire time that comes while the previous run of the schedule is still going is skipped
 * (cron semantics; runs never pile up). Catch-up: after an outage, fire times missed in the last
 * minute are still taken, older ones are dropped.
 */
export const SCHEDULE_POLICIES = { overlap: 'SKIP' as ScheduleOverlapPolicy, catchupWindow: '1 minute' } as const;

const MANAGED_NOTE = 'Managed by workflow-app-service: change it through the API; edits made here are reverted.';

/** The structured calendars of a cron expression: one, or two when either day field may match. */
export function calendarsOf(cron: string, timezone: string): CalendarSpec[] {
  const { fields, daysEitherMatch } = parseCron(cron, timezone);
  const base: CalendarSpec = {
    second: toRanges(fields.second), minute: toRanges(fields.minute), hour: toRanges(fields.hour),
    month: toRanges(fields.month).map((r) => ({ start: MONTHS[r.start - 1]!, end: MONTHS[r.end - 1]!, step: r.step })),
    comment: cron,
  };
  const dayOfMonth = toRanges(fields.dayOfMonth);
  const dayOfWeek = toRanges(fields.dayOfWeek).map((r) => ({ start: DAYS_OF_WEEK[r.start]!, end: DAYS_OF_WEEK[r.end]!, step: r.step }));
  if (!daysEitherMatch) return [{ ...base, dayOfMonth, dayOfWeek }];
  return [{ ...base, dayOfMonth, dayOfWeek: '*' }, { ...base, dayOfMonth: '*', dayOfWeek }];
}

/** Search attributes and summary of every scheduled-run workflow of a schedule: fired by Temporal or triggered by hand. */
export function scheduledRunStartOptions(row: Pick<ScheduleRowForTemporal, 'team_id' | 'project_id' | 'deployment_id' | 'name'>) {
  const { search, staticSummary } = scheduledRunStart(row);
  return { typedSearchAttributes: workflowSearchAttributes(search), staticSummary };
}

/** The same, as a recorded start (shared/workflow-starts/outbox.ts) keeps it. */
export function scheduledRunStart(row: Pick<ScheduleRowForTemporal, 'team_id' | 'project_id' | 'deployment_id' | 'name'>) {
  return {
    search: { teamId: row.team_id, projectId: row.project_id, deploymentId: row.deployment_id, triggerSource: 'schedule' },
    staticSummary: scheduledRunSummary(row.name),
  };
}

/** The Temporal Schedule a row should have. `note` carries a fingerprint the reconciler compares. */
export function desiredSchedule(row: ScheduleRowForTemporal, target: { scheduleId: string; workflowId: string; taskQueue: string }): ScheduleOptions {
  const spec = { calendars: calendarsOf(row.cron_expression, row.timezone), timezone: row.timezone };
  const action = {
    type: 'startWorkflow' as const, workflowType: 'scheduledRunWorkflow', workflowId: target.workflowId, taskQueue: target.taskQueue, args: [{ scheduleId: row.id }],
    workflowTaskTimeout: SCHEDULED_FIRE_TASK_TIMEOUT,
    ...scheduledRunStartOptions(row),
  };
  const fingerprint = sha256Hex(JSON.stringify({ spec, action, policies: SCHEDULE_POLICIES })).slice(0, 16);
  return {
    scheduleId: target.scheduleId,
    spec,
    action,
    policies: SCHEDULE_POLICIES,
    memo: { taskQueue: target.taskQueue },
    state: { paused: !row.enabled, note: `${MANAGED_NOTE} [${fingerprint}]` },
  };
}
