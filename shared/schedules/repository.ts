import type { Insertable, Selectable, Updateable } from 'kysely';
import { sql } from 'kysely';
import type { Database } from '../db/client.js';
import type { ScheduleLogStatus, ScheduleLogsTable, SchedulesTable } from '../db/types.js';

// Kysely queries only: access, quotas and mapping live in service.ts.

export type ScheduleRow = Selectable<SchedulesTable>;
export type ScheduleLogRow = Selectable<ScheduleLogsTable>;

/** Serializes quota checks of one team (two creates cannot both take the last slot). */
export async function lockTeam(db: Database, teamId: string): Promise<void> {
  await db.selectFrom('teams').select('id').where('id', '=', teamId).forUpdate().execute();
}

export async function countEnabledSchedules(db: Database, teamId: string, exceptId?: string): Promise<number> {
  let query = db.selectFrom('schedules').select(sql<number>`count(*)::int`.as('n'))
    .where('team_id', '=', teamId).where('enabled', '=', true).where('deleted_at', 'is', null);
  if (exceptId) query = query.where('id', '!=', exceptId);
  return (await query.executeTakeFirstOrThrow()).n;
}

export async function deploymentInProject(db: Database, deploymentId: string, projectId: string): Promise<boolean> {
  const row = await db.selectFrom('deployments').select('id')
    .where('id', '=', deploymentId).where('project_id', '=', projectId).where('deleted_at', 'is', null).executeTakeFirst();
  return row !== undefined;
}

export async function insertSchedule(db: Database, values: Insertable<SchedulesTable>): Promise<ScheduleRow> {
  return db.insertInto('schedules').values(values).returningAll().executeTakeFirstOrThrow();
}

export async function findLiveSchedule(db: Database, projectId: string, scheduleId: string, options: { forUpdate?: boolean } = {}): Promise<ScheduleRow | undefined> {
  let query = db.selectFrom('schedules').selectAll()
    .where('id', '=', scheduleId).where('project_id', '=', projectId).where('deleted_at', 'is', null);
  if (options.forUpdate) query = query.forUpdate();
  return query.executeTakeFirst();
}

export async function listLiveSchedules(db: Database, projectId: string): Promise<ScheduleRow[]> {
  return db.selectFrom('schedules').selectAll().where('project_id', '=', projectId).where('deleted_at', 'is', null)
    .orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
}

export async function updateSchedule(db: Database, scheduleId: string, values: Updateable<SchedulesTable>): Promise<ScheduleRow> {
  return db.updateTable('schedules').set({ ...values, updated_at: sql`now()` as never }).where('id', '=', scheduleId).returningAll().executeTakeFirstOrThrow();
}

export async function listLogs(db: Database, scheduleId: string, page: { limit: number; offset: number }): Promise<{ logs: ScheduleLogRow[]; total: number }> {
  const [logs, total] = await Promise.all([
    db.selectFrom('schedule_logs').selectAll().where('schedule_id', '=', scheduleId)
      .orderBy('started_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute(),
    db.selectFrom('schedule_logs').select(sql<number>`count(*)::int`.as('n')).where('schedule_id', '=', scheduleId).executeTakeFirstOrThrow(),
  ]);
  return { logs, total: total.n };
}

/** A schedule row by id, deleted or not (the scheduled-run activity decides what a deleted one means). */
export async function findScheduleById(db: Database, scheduleId: string): Promise<ScheduleRow | undefined> {
  return db.selectFrom('schedules').selectAll().where('id', '=', scheduleId).executeTakeFirst();
}

/** The columns Temporal's copy of a schedule is made from (temporal-sync.ts), deleted rows included. */
export async function findScheduleForTemporal(db: Database, scheduleId: string) {
  return db.selectFrom('schedules').select(['id', 'cron_expression', 'timezone', 'enabled', 'deleted_at', 'team_id', 'project_id', 'deployment_id', 'name'])
    .where('id', '=', scheduleId).executeTakeFirst();
}

/** The ids of every schedule not deleted, across teams (the reconciler). */
export async function listLiveScheduleIds(db: Database): Promise<Array<{ id: string }>> {
  return db.selectFrom('schedules').select('id').where('deleted_at', 'is', null).execute();
}

// An attempt's log row (activities/schedules/scheduled-run.ts): written once per attempt, its id
// chosen by the workflow, so a retried activity writes nothing the second time.

export interface AttemptLogKey { id: string; scheduleId: string; projectId: string; scheduledAt: string | null }

/** A refused attempt: failed and finished at once, with the refusal as its error. */
export async function insertRefusedAttemptLog(db: Database, log: AttemptLogKey & { error: string }): Promise<void> {
  await db.insertInto('schedule_logs').values({
    id: log.id, schedule_id: log.scheduleId, project_id: log.projectId, status: 'failed',
    scheduled_at: log.scheduledAt, started_at: sql`now()` as never, finished_at: sql`now()` as never, error: log.error, result: JSON.stringify({}),
  }).onConflict((oc) => oc.column('id').doNothing()).execute();
}

/** An attempt that started its run: running until `finishAttemptLog`. */
export async function insertRunningAttemptLog(db: Database, log: AttemptLogKey & { runId: string }): Promise<void> {
  await db.insertInto('schedule_logs').values({
    id: log.id, schedule_id: log.scheduleId, project_id: log.projectId, run_id: log.runId, status: 'running',
    scheduled_at: log.scheduledAt, started_at: sql`now()` as never, result: JSON.stringify({ runId: log.runId }),
  }).onConflict((oc) => oc.column('id').doNothing()).execute();
}

/** Closes an attempt's log row with its run's outcome. */
export async function finishAttemptLog(
  db: Database, logId: string, outcome: { status: ScheduleLogStatus; error: string | null; result: object },
): Promise<void> {
  await db.updateTable('schedule_logs')
    .set({ status: outcome.status, error: outcome.error, result: JSON.stringify(outcome.result), finished_at: sql`now()` as never })
    .where('id', '=', logId).execute();
}
