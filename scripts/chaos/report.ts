// The figures of a chaos run, which of them are violations (the goal: all zero), and the plain
// table `npm run chaos` prints. The same object is written with `--json` and asserted by the test.
import type { RunCounts } from './count.js';
import type { RequestRecord } from './drive.js';
import type { KillRecord } from './kill.js';
import type { OrderFigures } from './orders-count.js';
import { REJOIN_BOUND_MS, type RealtimeFigures } from './realtime.js';
import type { ScheduleFigures } from './schedules.js';
import { median } from './timing.js';

export interface ChaosFigures {
  /** The layout killed: `npm start` or `topology` (scripts/chaos/layout.ts). */
  layout: string;
  seed: number;
  durationSeconds: number;
  /** `collateral`: children restarted although another one was killed (they died with it). */
  kills: { planned: number; done: number; byTarget: Record<string, number>; collateral: Record<string, number> };
  heal: { medianMs: number | null; maxMs: number | null; byTarget: Record<string, { medianMs: number | null; maxMs: number | null }> };
  requests: {
    total: number; json: number; sse: number; ok: number; refused: number; serverErrors: number; failures: number;
    resumedStreams: number; resumes: number; idleResumes: number; refusedResumes: number;
    /** Run requests sent again with their Idempotency-Key after a 503 that named no run. */
    retried: number; retries: number;
  };
  runs: { accepted: number; completed: number; withdrawn: number; endedOtherwise: Record<string, number>; streamsChecked: number };
  /** Each must be 0. */
  violations: {
    lost: number;
    chargedTwice: number;
    chargedWithoutRunning: number;
    streamGapsOrRepeats: number;
    refusedWithoutRetryAfter: number;
    serverErrors: number;
    otherFailures: number;
    refusedButCharged: number;
    healTimeouts: number;
    /** The run itself could not finish (the stack died, would not stop, a step timed out). */
    harnessErrors: number;
  };
  /** Informational: worth a look, not part of the goal. */
  notes: {
    jsonStatusMismatches: number; malformedFrames: number; describeErrors: number; stackStoppedCleanly: boolean | null;
    /** 503 answers that carried the run's id (x-run-id): accepted and charged, the client told to follow up. */
    refusedNamingRun: number;
    /** Streams silent for 30 s while an event of theirs was already stored (resumed without a gap). */
    stalledStreams: number;
  };
  /** The every-second schedule (the topology's run): its lost runs, double charges and late returns are violations too. */
  schedules: ScheduleFigures | null;
  /** The hardware order sagas (the topology's run): orders in the wrong state, paid or refunded twice, stock off, callbacks never acknowledged are violations. */
  orders: OrderFigures | null;
  /** The realtime subscribers (the topology's run): a drop never rejoined, a rejoin later than REJOIN_BOUND_MS, the last change missed are violations. */
  realtime: RealtimeFigures | null;
  /** Up to 10 run ids / details per violation, to start an investigation from. */
  examples: Record<string, unknown[]>;
  dataDir: string | null;
}

const sample = <T>(items: T[]) => items.slice(0, 10);

export function buildFigures(input: {
  layout: string; targets: string[]; seed: number; startedAt: number; planned: number; kills: KillRecord[]; records: RequestRecord[]; counts: RunCounts | null;
  schedules?: ScheduleFigures | null; orders?: OrderFigures | null; realtime?: RealtimeFigures | null; harnessErrors: string[]; stackStoppedCleanly: boolean | null; dataDir: string | null;
}): ChaosFigures {
  const { kills, records, counts } = input;
  const healed = (list: KillRecord[]) => list.flatMap((k) => (k.healMs === null ? [] : [k.healMs]));
  const healOf = (list: KillRecord[]) => ({ medianMs: median(healed(list)), maxMs: healed(list).length ? Math.max(...healed(list)) : null });
  const byOutcome = (outcome: RequestRecord['outcome']) => records.filter((r) => r.outcome === outcome);
  const failures = byOutcome('failure');
  const serverErrors = byOutcome('server_error');
  const noRetryAfter = records.filter((r) => r.refusalsWithoutRetryAfter > 0);
  const sse = records.filter((r) => r.mode === 'sse');
  const targets = input.targets;
  return {
    layout: input.layout,
    seed: input.seed,
    durationSeconds: Math.round((Date.now() - input.startedAt) / 1000),
    kills: {
      planned: input.planned, done: kills.length,
      byTarget: Object.fromEntries(targets.map((t) => [t, kills.filter((k) => k.target === t).length])),
      collateral: Object.fromEntries(targets.map((t) => [t, kills.filter((k) => k.collateral.includes(t)).length])),
    },
    heal: { ...healOf(kills), byTarget: Object.fromEntries(targets.map((t) => [t, healOf(kills.filter((k) => k.target === t))])) },
    requests: {
      total: records.length, json: records.length - sse.length, sse: sse.length, ok: byOutcome('ok').length, refused: byOutcome('refused').length,
      serverErrors: serverErrors.length, failures: failures.length,
      resumedStreams: sse.filter((r) => r.resumes > 0).length, resumes: sum(sse.map((r) => r.resumes)),
      idleResumes: sum(sse.map((r) => r.idleResumes)), refusedResumes: sum(sse.map((r) => r.refusedResumes)),
      retried: records.filter((r) => r.retries > 0).length, retries: sum(records.map((r) => r.retries ?? 0)),
    },
    runs: {
      accepted: counts?.accepted ?? 0, completed: counts?.completed ?? 0, withdrawn: counts?.withdrawn ?? 0,
      endedOtherwise: counts?.endedOtherwise ?? {}, streamsChecked: counts?.streamsChecked ?? 0,
    },
    violations: {
      lost: counts?.lost.length ?? 0,
      chargedTwice: counts?.chargedTwice.length ?? 0,
      chargedWithoutRunning: counts?.chargedWithoutRunning.length ?? 0,
      streamGapsOrRepeats: counts?.streamViolations.length ?? 0,
      refusedWithoutRetryAfter: noRetryAfter.length,
      serverErrors: serverErrors.length,
      otherFailures: failures.length,
      refusedButCharged: counts?.refusedButCharged.length ?? 0,
      healTimeouts: kills.filter((k) => k.healMs === null).length,
      harnessErrors: input.harnessErrors.length + (counts ? 0 : 1),
    },
    notes: {
      jsonStatusMismatches: counts?.jsonStatusMismatches.length ?? 0,
      malformedFrames: sum(records.map((r) => r.malformedFrames)),
      describeErrors: counts?.describeErrors ?? 0,
      stackStoppedCleanly: input.stackStoppedCleanly,
      refusedNamingRun: counts?.refusedNamingRun.length ?? 0,
      stalledStreams: counts?.stalledStreams.length ?? 0,
    },
    schedules: input.schedules ?? null,
    orders: input.orders ?? null,
    realtime: input.realtime ?? null,
    examples: {
      lost: sample(counts?.lost ?? []),
      chargedTwice: sample(counts?.chargedTwice ?? []),
      chargedWithoutRunning: sample(counts?.chargedWithoutRunning ?? []),
      streamGapsOrRepeats: sample(counts?.streamViolations ?? []),
      refusedWithoutRetryAfter: sample(noRetryAfter.map(brief)),
      serverErrors: sample(serverErrors.map(brief)),
      otherFailures: sample(failures.map(brief)),
      refusedButCharged: sample(counts?.refusedButCharged ?? []),
      healTimeouts: sample(kills.filter((k) => k.healMs === null)),
      harnessErrors: sample(counts ? input.harnessErrors : [...input.harnessErrors, 'counting did not run']),
      jsonStatusMismatches: sample(counts?.jsonStatusMismatches ?? []),
      stalledStreams: sample(counts?.stalledStreams ?? []),
      refusedNamingRun: sample(counts?.refusedNamingRun ?? []),
      endedOtherwise: Object.entries(counts?.endedOtherwiseRuns ?? {}).map(([why, runIds]) => ({ why, runIds })),
    },
    dataDir: input.dataDir,
  };
}

function sum(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

function brief(record: RequestRecord) {
  return { mode: record.mode, status: record.status, runId: record.runId, tag: record.tag, at: new Date(record.startedAt).toISOString(), detail: record.detail };
}

export function violationCount(figures: ChaosFigures): number {
  const { schedules, orders, realtime } = figures;
  return sum(Object.values(figures.violations)) + (schedules ? schedules.lost + schedules.chargedTwice + schedules.lateAfterOutage : 0)
    + (orders ? sum(Object.values(orders.violations)) : 0) + (realtime ? sum(Object.values(realtime.violations)) : 0);
}

const seconds = (ms: number | null) => (ms === null ? '-' : `${(ms / 1000).toFixed(1)} s`);

function scheduleRows(schedules: ScheduleFigures): Array<[string, string] | null> {
  const known = schedules.nextFireAfterHealMs.flatMap(({ ms }) => (ms === null ? [] : [ms]));
  return [
    ['every-second schedule: fires logged, runs made', `${schedules.fires}, ${schedules.runs}`],
    ['  first scheduled run after each outage ended, max', known.length ? `${(Math.max(...known) / 1000).toFixed(2)} s (${schedules.nextFireAfterHealMs.map(({ child, ms }) => `${child} ${ms === null ? 'never' : `${(ms / 1000).toFixed(2)} s`}`).join(', ')})` : '-'],
    [`${schedules.lost ? '!!' : 'ok'} schedule runs lost`, String(schedules.lost)],
    [`${schedules.chargedTwice ? '!!' : 'ok'} schedule runs charged twice`, String(schedules.chargedTwice)],
    [`${schedules.lateAfterOutage ? '!!' : 'ok'} outages after which no scheduled run started within 1 s (+ ${(schedules.fireStartMs / 1000).toFixed(2)} s, a fire's usual start)`, String(schedules.lateAfterOutage)],
    null,
  ];
}

const mark = (n: number) => (n ? '!!' : 'ok');

function orderRows(orders: OrderFigures): Array<[string, string] | null> {
  const { byPlan, callbacks, violations: v } = orders;
  return [
    ['hardware orders: created (answer lost to a kill)', `${orders.created} (${orders.unknownToBuyers})`],
    ['  planned: paid by callback, callback lost, refunded, unpaid, closed by chan_b', `${byPlan.paid}, ${byPlan.paid_callback_lost}, ${byPlan.refunded}, ${byPlan.unpaid}, ${byPlan.closed_by_channel}`],
    ['  ended: paid (by the expiry query), refunded, expired, pending', `${orders.paid} (${orders.paidByQuery}), ${orders.refunded}, ${orders.expired}, ${orders.pending}`],
    ['  callbacks: orders, deliveries, retried, repeated on purpose', `${callbacks.delivered}, ${callbacks.attempts}, ${callbacks.retried}, ${callbacks.repeated}`],
    ['  deliveries not acknowledged (sent again), by answer', Object.entries(callbacks.refusals).map(([answer, n]) => `${answer}: ${n}`).join(', ') || '-'],
    ['  payment callback acknowledged after, median / max', `${seconds(callbacks.ackMedianMs)} / ${seconds(callbacks.ackMaxMs)}`],
    ['  create and pay requests sent again; expired before paid', `${orders.requestRetries}; ${orders.expiredBeforePay}`],
    ...Object.entries(v).map(([name, n]): [string, string] => [`${mark(n)} orders ${name}`, String(n)]),
    null,
  ];
}

function realtimeRows(realtime: RealtimeFigures): Array<[string, string] | null> {
  const v = realtime.violations;
  const byTarget = Object.entries(realtime.dropsByTarget)
    .map(([t, d]) => `${t} ${d.drops}, down ${seconds(d.downMedianMs)} / ${seconds(d.downMaxMs)}`).join('; ');
  return [
    ['realtime subscribers: row changes received each', `${realtime.subscribers}: ${realtime.changesReceived.join(', ')}`],
    ['  channels dropped by the kill before, not joined for median / max', `${realtime.drops}${byTarget ? ` (${byTarget})` : ''}`],
    ['  rejoined after the outage ended, max', realtime.rejoinAfterOutageMaxMs === null ? '-' : `${(realtime.rejoinAfterOutageMaxMs / 1000).toFixed(2)} s`],
    [`${mark(v.notRejoined)} realtime drops never rejoined`, String(v.notRejoined)],
    [`${mark(v.lateRejoins)} realtime rejoins later than ${REJOIN_BOUND_MS / 1000} s after the outage`, String(v.lateRejoins)],
    [`${mark(v.finalChangeMissed)} subscribers that missed the last row change`, String(v.finalChangeMissed)],
    null,
  ];
}

/** A two-column table: figure, value. Violations are marked so a glance finds them. */
export function formatTable(figures: ChaosFigures): string {
  const { kills, heal, requests, runs, violations, notes } = figures;
  const rows: Array<[string, string] | null> = [
    ['layout', figures.layout],
    ['seed', String(figures.seed)],
    ['duration', `${figures.durationSeconds} s`],
    ['kills (done / planned)', `${kills.done} / ${kills.planned}`],
    ...Object.keys(kills.byTarget).map((t): [string, string] => [`  ${t}`, `${kills.byTarget[t] ?? 0} kills, heal median ${seconds(heal.byTarget[t]?.medianMs ?? null)}, max ${seconds(heal.byTarget[t]?.maxMs ?? null)}; restarted with another ${kills.collateral[t] ?? 0}×`]),
    ['heal time median / max', `${seconds(heal.medianMs)} / ${seconds(heal.maxMs)}`],
    null,
    ['requests (json / sse)', `${requests.total} (${requests.json} / ${requests.sse})`],
    ['  answered 200', String(requests.ok)],
    ['  refused 503 (in the end)', String(requests.refused)],
    ['  sent again after a 503 with the same Idempotency-Key (requests, retries)', `${requests.retried} (${requests.retries})`],
    ['  streams resumed (resumes, after silence, refused)', `${requests.resumedStreams} (${requests.resumes}, ${requests.idleResumes}, ${requests.refusedResumes})`],
    null,
    ['runs accepted', String(runs.accepted)],
    ['runs completed', String(runs.completed)],
    ['runs withdrawn (not started, refunded)', String(runs.withdrawn)],
    ...Object.entries(runs.endedOtherwise).map(([why, n]): [string, string] => [`runs ended ${why}`, String(n)]),
    ['streams checked', String(runs.streamsChecked)],
    null,
    ...Object.entries(violations).map(([name, n]): [string, string] => [`${n ? '!!' : 'ok'} ${name}`, String(n)]),
    null,
    ...(figures.schedules ? scheduleRows(figures.schedules) : []),
    ...(figures.orders ? orderRows(figures.orders) : []),
    ...(figures.realtime ? realtimeRows(figures.realtime) : []),
    ['503 naming an accepted run (note)', String(notes.refusedNamingRun)],
    ['streams stalled with an event waiting (note)', String(notes.stalledStreams)],
    ['json status mismatches (note)', String(notes.jsonStatusMismatches)],
    ['malformed SSE frames (note)', String(notes.malformedFrames)],
    ['stack stopped cleanly (note)', String(notes.stackStoppedCleanly)],
  ];
  const width = Math.max(...rows.map((row) => row?.[0].length ?? 0));
  const lines = rows.map((row) => (row ? `${row[0].padEnd(width)}  ${row[1]}` : ''));
  const total = violationCount(figures);
  lines.push('', total ? `${total} violation(s): see "examples" in the JSON (--json) or below` : 'no violations');
  if (total) {
    for (const [name, list] of Object.entries(figures.examples)) {
      if (list.length && name in violations && violations[name as keyof typeof violations]) lines.push(`  ${name}: ${JSON.stringify(list)}`);
    }
    for (const [name, list] of Object.entries(figures.orders?.examples ?? {})) if (list.length) lines.push(`  orders ${name}: ${JSON.stringify(list)}`);
    const late = figures.realtime?.rejoins.filter((r) => r.afterOutageMs === null || r.afterOutageMs > REJOIN_BOUND_MS) ?? [];
    if (late.length) lines.push(`  realtime rejoins: ${JSON.stringify(late.slice(0, 10))}`);
  }
  if (figures.dataDir) lines.push(`  stack data and log kept in ${figures.dataDir}`);
  return lines.join('\n');
}
