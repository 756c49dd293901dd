// One chaos run (issue 18), start to finish: a fresh stack with a fake model server, clients
// driving runs, a bounded loop of SIGKILLs, then, once everything has settled, the count. Used by
// `npm run chaos` (index.ts) and by the short test (test/chaos/chaos.test.ts).
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { createDb, type Database } from '../../shared/db/client.js';
import { startFakeLlm, type FakeLlm } from '../../test/app-runs/llm-server.js';
import { countRuns, type RunCounts } from './count.js';
import { startDrivers, type Drivers } from './drive.js';
import { runKillLoop, type KillRecord } from './kill.js';
import { npmStartLayout, type ChaosLayout } from './layout.js';
import { killPlan, seededRng } from './random.js';
import { prepareChaosApp } from './setup.js';
import type { OrderFigures } from './orders-count.js';
import type { RealtimeFigures } from './realtime.js';
import { prepareSagasAndSubscribers, type SagasAndSubscribers } from './sagas-and-subscribers.js';
import { countScheduleFires, startEverySecondSchedule, stopSchedule, type ScheduleFigures, type ScheduleTarget } from './schedules.js';
import { buildFigures, violationCount, type ChaosFigures } from './report.js';
import { isReady, startStack, type ChaosStack } from './stack.js';
import { sleep, until, within } from './timing.js';

export interface ChaosOptions {
  /** What is started and killed: `npm start` (the default) or the topology. */
  layout: ChaosLayout;
  kills: number;
  seed: number;
  /** Concurrent clients driving runs for the whole kill loop. */
  clients: number;
  /** Pause between a heal and the next kill, ms (random in the range). */
  pauseMs: [number, number];
  /** A kill the stack has not healed from within this is a violation, and ends the loop. */
  healTimeoutMs: number;
  /** After the loop: how long clients may take to finish their requests (streams resume until their end). */
  drainTimeoutMs: number;
  /** Then: how long to wait for every run to leave `running` (the reconciler picks up runs after 20 s). */
  settleTimeoutMs: number;
  /** Keep the stack's data dir (database, Temporal store, stack.log): 'on-violation' keeps it to investigate. */
  keepDataDir: 'always' | 'on-violation' | 'never';
  log(line: string): void;
}

export const defaultChaosOptions: ChaosOptions = {
  layout: npmStartLayout,
  kills: 100,
  seed: Date.now() % 2 ** 31,
  clients: 4,
  pauseMs: [1_000, 6_000],
  healTimeoutMs: 120_000,
  drainTimeoutMs: 240_000,
  settleTimeoutMs: 180_000,
  keepDataDir: 'on-violation',
  log: (line) => process.stdout.write(`[chaos ${new Date().toISOString().slice(11, 19)}] ${line}\n`),
};

/** ~40 deltas 50 ms apart: each run streams for about 2 s, so kills land while runs are in flight. */
const LLM_TOKENS = Array.from({ length: 40 }, (_, i) => `token${i} `);

async function openRuns(db: Database, deploymentId: string): Promise<number> {
  const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM runs WHERE deployment_id = ${deploymentId}::uuid AND status = 'running'`.execute(db);
  return Number(rows[0]?.n ?? 0);
}

export async function runChaos(overrides: Partial<ChaosOptions> = {}): Promise<ChaosFigures> {
  const options: ChaosOptions = { ...defaultChaosOptions, ...overrides };
  const { log } = options;
  const startedAt = Date.now();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'wfapp-chaos-'));
  await chmod(dataDir, 0o755); // under root, PostgreSQL runs as `postgres` and must enter it
  const targets = Object.keys(options.layout.targets);
  const plan = killPlan(options.kills, seededRng(options.seed), targets);
  log(`${options.layout.name}: seed ${options.seed}, ${options.kills} kills, ${options.clients} clients; stack data in ${dataDir}`);

  const harnessErrors: string[] = [];
  const kills: KillRecord[] = [];
  let drivers: Drivers | undefined;
  let counts: RunCounts | null = null;
  let scheduleId: string | undefined;
  let schedules: ScheduleFigures | null = null;
  let sagasAndSubscribers: SagasAndSubscribers | undefined;
  let orders: OrderFigures | null = null;
  let realtime: RealtimeFigures | null = null;
  let stackStoppedCleanly: boolean | null = null;
  let llm: FakeLlm | undefined;
  let stack: ChaosStack | undefined;
  let db: Database | undefined;
  try {
    llm = await startFakeLlm({ tokens: LLM_TOKENS, delayMs: 50 });
    // The payment channels exist before the stack: its processes are configured with their keys.
    if (options.layout.ordersAndRealtime) sagasAndSubscribers = await prepareSagasAndSubscribers();
    stack = await startStack({ layout: options.layout, dataDir, llmBaseUrl: llm.url, env: sagasAndSubscribers?.env, log });
    // A pool of our own for setup and counting; idle connections dropped by a PostgreSQL kill are discarded.
    db = createDb(stack.info.databaseUrl, { poolSize: 2, applicationName: 'wfapp-chaos', onConnectionError: () => {} });
    const app = await within(prepareChaosApp(db, stack.info.demo.teamId), 30_000, 'publishing the chaos app');
    const scheduleTarget: ScheduleTarget = { apiUrl: stack.info.apiUrl, apiKey: stack.info.demo.apiKey, projectId: stack.info.demo.projectId, deploymentId: stack.info.demo.deploymentId };
    if (options.layout.scheduleEverySecond) scheduleId = await within(startEverySecondSchedule(db, scheduleTarget), 60_000, 'creating the every-second schedule');
    if (sagasAndSubscribers) await within(sagasAndSubscribers.start(stack, db, options.seed), 90_000, 'starting the realtime subscribers and the order buyers');
    drivers = startDrivers({ apiUrl: stack.info.apiUrl, apiKey: stack.info.demo.apiKey, deploymentId: app.deploymentId, clients: options.clients, seed: options.seed });
    await sleep(3_000); // runs in flight before the first kill

    try {
      await runKillLoop({ stack, layout: options.layout, plan, rng: seededRng(options.seed + 1), pauseMs: options.pauseMs, healTimeoutMs: options.healTimeoutMs, log }, kills);
    } catch (error) {
      harnessErrors.push(`kill loop: ${(error as Error).message}`);
    }

    log(`kills done; letting ${options.clients} clients finish their requests`);
    await within(Promise.all([drivers.stop(), sagasAndSubscribers?.stopDrivers()]), options.drainTimeoutMs, 'clients finishing their requests').catch((error: Error) => harnessErrors.push(error.message));
    await until(async () => (await isReady(stack!.info.apiUrl)) || undefined, 60_000, 'stack ready after the kills')
      .catch((error: Error) => harnessErrors.push(error.message));
    if (scheduleId) {
      await stopSchedule(scheduleTarget, scheduleId).catch((error: Error) => harnessErrors.push(`disabling the schedule: ${error.message}`));
      await sleep(5_000); // its last fires' runs (a fraction of a second each) end
      schedules = await within(countScheduleFires(db, scheduleId, kills), 60_000, 'counting the schedule');
    }
    if (sagasAndSubscribers) {
      realtime = await within(sagasAndSubscribers.countRealtime(stack, kills), 120_000, 'counting the realtime subscribers')
        .catch((error: Error) => { harnessErrors.push(error.message); return null; });
    }
    log(`${drivers.records.length} requests made; waiting for open runs to end`);
    await until(async () => ((await openRuns(db!, app.deploymentId)) === 0 ? true : undefined), options.settleTimeoutMs, 'open runs ending', 1_000)
      .catch(async () => log(`${await openRuns(db!, app.deploymentId).catch(() => '?')} runs still open after ${options.settleTimeoutMs / 1000} s`));
    counts = await within(countRuns({
      db, temporalAddress: stack.info.temporalAddress, deploymentId: app.deploymentId, runBaseMilli: app.runBaseMilli, records: drivers.records,
    }), 180_000, 'counting');
    if (sagasAndSubscribers) {
      log('waiting for the last orders to expire, then counting them');
      orders = await within(sagasAndSubscribers.countOrders(stack, db), 360_000, 'counting the orders')
        .catch((error: Error) => { harnessErrors.push(error.message); return null; });
    }
  } catch (error) {
    harnessErrors.push((error as Error).message);
  } finally {
    await sagasAndSubscribers?.close();
    await db?.destroy().catch(() => {});
    if (stack) {
      const stopped = await stack.stop().catch((error: Error) => { harnessErrors.push(`stack stop: ${error.message}`); return null; });
      stackStoppedCleanly = stopped?.clean ?? false;
    }
    await llm?.close().catch(() => {});
  }

  let figures = buildFigures({
    layout: options.layout.name, targets, seed: options.seed, startedAt, planned: options.kills, kills, records: drivers?.records ?? [], counts, schedules, orders, realtime, harnessErrors, stackStoppedCleanly, dataDir,
  });
  // What every client saw, next to the stack's log, for whoever investigates a kept data dir.
  await writeFile(path.join(dataDir, 'requests.json'), JSON.stringify(drivers?.records ?? [])).catch(() => {});
  await writeFile(path.join(dataDir, 'figures.json'), JSON.stringify(figures, null, 2)).catch(() => {});
  const keep = options.keepDataDir === 'always' || (options.keepDataDir === 'on-violation' && violationCount(figures) > 0);
  if (!keep) {
    await rm(dataDir, { recursive: true, force: true });
    figures = { ...figures, dataDir: null };
  }
  return figures;
}
