// A schedule firing every second through the kills (issue 43, the topology's chaos run): created
// through the service's API on the demo app (a quick one, so fires never overlap), disabled after
// the kill loop, then counted from its log and runs: every fire's run ended and charged once, and
// after each outage a scheduled run started within one interval of the outage's end.
import { sql } from 'kysely';
import type { Database } from '../../shared/db/client.js';
import { planCodes } from '../../shared/identity/schemas.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import type { KillRecord } from './kill.js';
import { callThroughOrigin, type OriginTarget } from './origin.js';

const INTERVAL_MS = 1_000;

export interface ScheduleTarget extends OriginTarget { projectId: string; deploymentId: string }

export interface ScheduleFigures {
  scheduleId: string;
  /** Fires the schedule logged, and the runs they made. */
  fires: number;
  runs: number;
  /** Violations: runs left open, runs charged more than once, outages after which it did not fire again within an interval (plus fireStartMs). */
  lost: number;
  chargedTwice: number;
  lateAfterOutage: number;
  /**
   * Per kill: from the outage's end to the first scheduled run started after it (ms; null: none).
   * A fire the outage held up counts: the overlap policy (skip) keeps one fire pending, which runs
   * once the outage ends, with its own earlier fire time; fires while it runs are skipped.
   */
  nextFireAfterHealMs: Array<{ child: string; ms: number | null }>;
  /** A fire's usual delay from its fire time to its log row in this run (median): the allowance beside the interval. */
  fireStartMs: number;
}

/** Lets schedules fire every second (an operator's setting; the default plans allow one a minute at most), then creates one. */
export async function startEverySecondSchedule(db: Database, target: ScheduleTarget): Promise<string> {
  await upsertSiteSetting(db, 'team.quota_limits.schedules', Object.fromEntries(['default', ...planCodes].map((plan) => [plan, { maxEnabled: 100, minIntervalSeconds: 1 }])));
  // Running APIs see a setting within moments: the create is retried until they do.
  const created = await callThroughOrigin(target, 'POST', `/projects/${target.projectId}/schedules`, {
    name: 'chaos: every second', cron_expression: '* * * * * *', deployment_id: target.deploymentId,
    trigger_config: { inputs: { name: 'Ada', n: 1 } }, max_retries: 0,
  });
  return (created.schedule as { id: string }).id;
}

export async function stopSchedule(target: ScheduleTarget, scheduleId: string): Promise<void> {
  await callThroughOrigin(target, 'PUT', `/projects/${target.projectId}/schedules/${scheduleId}`, { enabled: false });
}

export async function countScheduleFires(db: Database, scheduleId: string, kills: KillRecord[]): Promise<ScheduleFigures> {
  const fires = await db.selectFrom('schedule_logs').select(['scheduled_at', 'started_at', 'run_id']).where('schedule_id', '=', scheduleId).orderBy('started_at').execute();
  const runIds = fires.flatMap((fire) => (fire.run_id ? [fire.run_id] : []));
  const { rows } = runIds.length ? await sql<{ id: string; status: string; charge_rows: string }>`
    SELECT r.id, r.status,
      (SELECT count(*) FROM credit_transactions t WHERE t.reason = 'run' AND t.reference = 'run:' || r.id::text) AS charge_rows
    FROM runs r WHERE r.id = ANY(${runIds}::uuid[])`.execute(db) : { rows: [] };
  const fireTimes = fires.map((fire) => fire.started_at.getTime());
  // A fire's log row is written a little after its fire time (Temporal starts it, its first task
  // runs): the next fire after an outage is on time when it comes within one interval plus that.
  const startDelays = fires.flatMap((fire) => (fire.scheduled_at ? [fire.started_at.getTime() - fire.scheduled_at.getTime()] : [])).sort((a, b) => a - b);
  const fireStartMs = startDelays[Math.floor(startDelays.length / 2)] ?? 0;
  const nextFireAfterHealMs = kills.filter((kill) => kill.healMs !== null).map((kill) => {
    const end = kill.at + kill.healMs!;
    const next = fireTimes.find((time) => time >= end);
    return { child: kill.child, ms: next === undefined ? null : next - end };
  });
  return {
    scheduleId, fires: fires.length, runs: rows.length,
    lost: rows.filter((row) => row.status === 'running' || row.status === 'waiting').length,
    chargedTwice: rows.filter((row) => Number(row.charge_rows) > 1).length,
    lateAfterOutage: nextFireAfterHealMs.filter(({ ms }) => ms === null || ms > INTERVAL_MS + fireStartMs).length,
    nextFireAfterHealMs,
    fireStartMs,
  };
}
