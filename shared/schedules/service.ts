import { projectAccess } from '../access/service.js';
import type { Database } from '../db/client.js';
import { isUniqueViolation } from '../db/errors.js';
import type { PlanCode } from '../db/types.js';
import { AppError } from '../errors.js';
import { isUuid, newId } from '../ids.js';
import type { SiteSettingsCache } from '../site-settings/cache.js';
import { CronError, isValidTimezone, parseCron, shortestInterval } from './cron.js';
import { findActiveProject } from '../identity/repository.js';
import * as repo from './repository.js';

// Schedule rules of spec §4.3, §3.3 and §8.2: access, cron and timezone checks, plan quotas.
// Temporal is brought in line by the caller after the write commits (temporal-sync.ts).

export type ScheduleCaller = { kind: 'jwt'; userId: string } | { kind: 'api-key'; userId: string; teamId: string };

export interface ScheduleFields {
  name?: string; description?: string | null; cron_expression?: string; timezone?: string; deployment_id?: string | null;
  trigger_config?: Record<string, unknown>; enabled?: boolean; timeout_ms?: number; max_retries?: number;
}

export const DEFAULT_MAX_RETRIES = 3;

const errors = {
  required: () => new AppError(400, 'name 和 cron_expression are required', 'name and cron_expression are required'),
  cronEmpty: () => new AppError(400, 'Cron expression empty', 'cron_expression must not be empty'),
  cronInvalid: (why: string) => new AppError(400, 'Cron expression invalid', `cron_expression must have 5 fields (minute hour day month weekday) or 6 with leading seconds: ${why}`),
  timezone: (tz: string) => new AppError(400, 'Timezone invalid', `Unknown timezone '${tz}': use an IANA name such as Europe/Paris`),
  deployment: () => new AppError(400, 'deployment does not exist or does not belong to the project', 'deployment does not exist or does not belong to the project'),
  noAccess: () => new AppError(403, 'no access to the project', 'no access to the project'),
  adminRequired: () => new AppError(403, 'project administrator required', 'project administrator required (team owner or admin)'),
  projectMissing: () => new AppError(404, 'project does not exist', 'project does not exist'),
  scheduleMissing: () => new AppError(404, 'task does not exist', 'task does not exist'),
  nameTaken: () => new AppError(409, 'task name already exists', 'task name already exists in this project'),
  interval: (minimum: number, actual: number) => new AppError(400, 'execution frequency too high',
    `runs ${actual} s apart; the plan allows one run every ${minimum} s at most`, { code: 'schedule_interval_limit', minIntervalSeconds: minimum, actualIntervalSeconds: actual }),
  count: (maxEnabled: number) => new AppError(409, 'enabled-task quota reached',
    `the team already has ${maxEnabled} enabled schedules, the most its plan allows`, { code: 'schedule_count_limit', maxEnabled }),
};

type Access = 'member' | 'admin';

/** The project and the caller's access to it: 404 when it does not exist, 403 when the caller is not in its team. */
async function requireProject(db: Database, caller: ScheduleCaller, projectId: string, needs: Access) {
  const granted = await projectAccess(db, caller, projectId);
  if (!granted) throw errors.projectMissing();
  if (granted.access === 'none') throw errors.noAccess();
  if (needs === 'admin' && granted.access !== 'admin') throw errors.adminRequired();
  // The plan decides the quotas; a project deleted since the check answers like a missing one.
  const project = await findActiveProject(db, granted.id);
  if (!project) throw errors.projectMissing();
  return project;
}

async function requireSchedule(db: Database, projectId: string, scheduleId: string, options: { forUpdate?: boolean } = {}) {
  const row = isUuid(scheduleId) ? await repo.findLiveSchedule(db, projectId, scheduleId, options) : undefined;
  if (!row) throw errors.scheduleMissing();
  return row;
}

function checkCron(cron: string, timezone: string): void {
  if (!isValidTimezone(timezone)) throw errors.timezone(timezone);
  try {
    parseCron(cron, timezone);
  } catch (error) {
    if (error instanceof CronError) throw errors.cronInvalid(error.message);
    throw error;
  }
}

async function quotaOf(settings: SiteSettingsCache, plan: PlanCode) {
  const quotas = await settings.get('team.quota_limits.schedules');
  return quotas[plan] ?? quotas.default!;
}

/** §8.2 minimum interval, measured on the real upcoming fire times in the schedule's timezone. */
async function checkInterval(settings: SiteSettingsCache, plan: PlanCode, cron: string, timezone: string): Promise<void> {
  const { minIntervalSeconds } = await quotaOf(settings, plan);
  const interval = shortestInterval(cron, timezone);
  if (interval < minIntervalSeconds) throw errors.interval(minIntervalSeconds, interval);
}

/** §8.2 enabled schedules per team; call inside the transaction that holds the team lock. */
async function checkCount(db: Database, settings: SiteSettingsCache, team: { id: string; plan: PlanCode }, exceptId?: string): Promise<void> {
  const { maxEnabled } = await quotaOf(settings, team.plan);
  if ((await repo.countEnabledSchedules(db, team.id, exceptId)) >= maxEnabled) throw errors.count(maxEnabled);
}

async function checkDeployment(db: Database, projectId: string, deploymentId: string | null | undefined): Promise<void> {
  if (deploymentId && !(await repo.deploymentInProject(db, deploymentId, projectId))) throw errors.deployment();
}

async function mapNameConflict<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (isUniqueViolation(error)) throw errors.nameTaken();
    throw error;
  }
}

export async function listSchedules(db: Database, caller: ScheduleCaller, projectId: string): Promise<repo.ScheduleRow[]> {
  const project = await requireProject(db, caller, projectId, 'member');
  return repo.listLiveSchedules(db, project.id);
}

export async function getSchedule(db: Database, caller: ScheduleCaller, projectId: string, scheduleId: string): Promise<repo.ScheduleRow> {
  const project = await requireProject(db, caller, projectId, 'member');
  return requireSchedule(db, project.id, scheduleId);
}

export async function createSchedule(db: Database, settings: SiteSettingsCache, caller: ScheduleCaller, projectId: string, fields: ScheduleFields): Promise<repo.ScheduleRow> {
  const project = await requireProject(db, caller, projectId, 'admin');
  const name = fields.name?.trim();
  const cron = fields.cron_expression?.trim();
  if (!name || !cron) throw errors.required();
  const timezone = fields.timezone ?? 'UTC';
  checkCron(cron, timezone);
  await checkInterval(settings, project.plan_code, cron, timezone);
  await checkDeployment(db, project.id, fields.deployment_id);
  const enabled = fields.enabled ?? true;
  const timeoutMs = fields.timeout_ms ?? (await settings.get('schedule.default_timeout_ms'));
  return mapNameConflict(() => db.transaction().execute(async (trx) => {
    await repo.lockTeam(trx, project.team_id);
    if (enabled) await checkCount(trx, settings, { id: project.team_id, plan: project.plan_code });
    return repo.insertSchedule(trx, {
      id: newId(), project_id: project.id, team_id: project.team_id, deployment_id: fields.deployment_id ?? null,
      name, description: fields.description ?? null, cron_expression: cron, timezone, trigger_config: JSON.stringify(fields.trigger_config ?? {}),
      enabled, timeout_ms: timeoutMs, max_retries: fields.max_retries ?? DEFAULT_MAX_RETRIES,
      created_by: caller.userId,
    });
  }));
}

/** PUT: any subset of the fields. Quotas on re-enable (count and interval) and on a cron or timezone change (interval). */
export async function updateSchedule(db: Database, settings: SiteSettingsCache, caller: ScheduleCaller, projectId: string, scheduleId: string, fields: ScheduleFields): Promise<repo.ScheduleRow> {
  const project = await requireProject(db, caller, projectId, 'admin');
  await requireSchedule(db, project.id, scheduleId);
  if (fields.cron_expression !== undefined && fields.cron_expression.trim() === '') throw errors.cronEmpty();
  if (fields.name !== undefined && fields.name.trim() === '') throw errors.required();
  await checkDeployment(db, project.id, fields.deployment_id);
  return mapNameConflict(() => db.transaction().execute(async (trx) => {
    await repo.lockTeam(trx, project.team_id);
    const current = await requireSchedule(trx, project.id, scheduleId, { forUpdate: true });
    const cron = fields.cron_expression?.trim() ?? current.cron_expression;
    const timezone = fields.timezone ?? current.timezone;
    const reEnabling = fields.enabled === true && !current.enabled;
    if (cron !== current.cron_expression || timezone !== current.timezone) checkCron(cron, timezone);
    if (reEnabling || cron !== current.cron_expression || timezone !== current.timezone) await checkInterval(settings, project.plan_code, cron, timezone);
    if (reEnabling) await checkCount(trx, settings, { id: project.team_id, plan: project.plan_code }, current.id);
    const changes: Parameters<typeof repo.updateSchedule>[2] = { cron_expression: cron, timezone };
    if (fields.name !== undefined) changes.name = fields.name.trim();
    if (fields.description !== undefined) changes.description = fields.description;
    if (fields.deployment_id !== undefined) changes.deployment_id = fields.deployment_id;
    if (fields.trigger_config !== undefined) changes.trigger_config = JSON.stringify(fields.trigger_config);
    if (fields.enabled !== undefined) changes.enabled = fields.enabled;
    if (fields.timeout_ms !== undefined) changes.timeout_ms = fields.timeout_ms;
    if (fields.max_retries !== undefined) changes.max_retries = fields.max_retries;
    return repo.updateSchedule(trx, current.id, changes);
  }));
}

/** §3.3: soft delete and disable; the name becomes free again. */
export async function deleteSchedule(db: Database, caller: ScheduleCaller, projectId: string, scheduleId: string): Promise<void> {
  const project = await requireProject(db, caller, projectId, 'admin');
  const row = await requireSchedule(db, project.id, scheduleId);
  await repo.updateSchedule(db, row.id, { deleted_at: new Date(), enabled: false });
}

/** The schedule a manual trigger runs: project access, and it must name a deployment. */
export async function requireTriggerable(db: Database, caller: ScheduleCaller, projectId: string, scheduleId: string): Promise<repo.ScheduleRow> {
  const row = await getSchedule(db, caller, projectId, scheduleId);
  if (!row.deployment_id) throw new AppError(400, 'task has no deployment', 'set deployment_id before triggering the schedule');
  return row;
}

export async function listScheduleLogs(db: Database, caller: ScheduleCaller, projectId: string, scheduleId: string, page: { limit: number; offset: number }) {
  const row = await getSchedule(db, caller, projectId, scheduleId);
  return repo.listLogs(db, row.id, page);
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** Spec §2.1. */
export function toScheduleView(row: repo.ScheduleRow) {
  return {
    id: row.id, project_id: row.project_id, team_id: row.team_id, deployment_id: row.deployment_id, name: row.name,
    description: row.description, cron_expression: row.cron_expression, timezone: row.timezone, trigger_config: row.trigger_config,
    enabled: row.enabled, timeout_ms: row.timeout_ms, max_retries: row.max_retries,
    created_at: row.created_at.toISOString(), updated_at: row.updated_at.toISOString(), deleted_at: iso(row.deleted_at),
  };
}

/** Spec §2.2, plus the run it started and when Temporal meant to fire it. */
export function toScheduleLogView(row: repo.ScheduleLogRow) {
  return {
    id: row.id, schedule_id: row.schedule_id, project_id: row.project_id, status: row.status,
    started_at: row.started_at.toISOString(), finished_at: iso(row.finished_at), error: row.error, result: row.result,
    run_id: row.run_id, scheduled_at: iso(row.scheduled_at),
  };
}

