import type { Insertable, Selectable, Updateable } from 'kysely';
import { sql } from 'kysely';
import type { Database } from '../db/client.js';
import type { ScheduleLogsTable, SchedulesTable } from '../db/types.js';

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
