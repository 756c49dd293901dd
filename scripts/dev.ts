// `npm start`: the whole stack on embedded defaults, in one process you stop with Ctrl-C.
// Starts what is missing (PostgreSQL, Temporal dev server with its UI), migrates, seeds a demo
// tenant, runs the worker and the API, and prints where everything is. PostgreSQL, Temporal and
// the worker are supervised: one that dies comes back on the same address (scripts/dev/supervisor.ts).
import { mkdir, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { buildApp } from '../api/app.js';
import { connectAppDeps } from '../api/connect-deps.js';
import { loadConfig } from '../shared/config.js';
import { createDb } from '../shared/db/client.js';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../shared/db/embedded.js';
import { migrateToLatest } from '../shared/db/migrate.js';
import { findFreePort, isPortFree } from '../shared/ports.js';
import { startTemporalDevServer, type DevServerHandle } from '../temporal/dev-server.js';
import { bundleWorkflows } from '../worker/bundle.js';
import { startWorkers } from '../worker/start.js';
import { superviseWorkers } from '../worker/supervise-workers.js';
import { DataDirLockedError, lockDataDir } from './dev/data-dir-lock.js';
import { runtimeFile, type RuntimeInfo } from './dev/runtime-file.js';
import { seedDemoTenant } from './dev/seed-demo.js';
import { supervise, type SupervisedChild, type Supervisor } from '../shared/supervisor.js';
import { startWorkerProcess } from './dev/worker-process.js';
import { watchWork } from './dev/work-watchdog.js';
import { probeTemporalWrites } from '../temporal/readiness.js';
import { installWorkerRuntime } from '../worker/runtime.js';

const say = (line: string) => process.stdout.write(`[start] ${line}\n`);
const startedAt = performance.now();
let config = loadConfig({ LOG_LEVEL: 'warn', ...process.env });
await mkdir(config.DATA_DIR, { recursive: true });
// Before anything starts: a second `npm start` on this folder refuses here (scripts/dev/data-dir-lock.ts).
const dataDirLock = await lockDataDir(config.DATA_DIR).catch((error: unknown) => {
  if (!(error instanceof DataDirLockedError)) throw error;
  say(`refusing to start: ${error.message}`);
  process.exit(1);
});
const runtime = runtimeFile(path.join(config.DATA_DIR, 'runtime.json'));

// We own shutdown order (API, worker, Temporal, PostgreSQL), so the SDK must not act on signals
// itself; its logs follow LOG_LEVEL through pino like the API's.
installWorkerRuntime(config.LOG_LEVEL);

const STEP_TIMEOUT_MS = 5_000;
const cleanups: Array<{ name: string; run: () => Promise<unknown> }> = [];
// Run in reverse: the lock is released last, once everything that uses the folder has stopped.
cleanups.push({ name: 'data folder lock', run: () => dataDirLock.release() });
type ChildKey = keyof RuntimeInfo['children'];
const supervised: Partial<Record<ChildKey, Supervisor>> = {};
let stopping = false;
/**
 * Ordered shutdown. Repeated signals are expected, not a request to hurry: Ctrl-C reaches this
 * process from the terminal and again from npm, which forwards it. A watchdog bounds the whole stop.
 */
async function stop(exitCode: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  say('stopping…');
  // From here an exit is expected (a terminal's Ctrl-C also reaches PostgreSQL, in our process
  // group): nothing is restarted, and each child is stopped in its turn below.
  for (const supervisor of Object.values(supervised)) supervisor.stopRestarting();
  // The watchdog also keeps the event loop alive: some SDK shutdown steps settle from native
  // threads that hold no Node handle, and the process would otherwise exit halfway through.
  setTimeout(() => { say('stop took too long; exiting'); process.exit(1); }, 45_000);
  for (const { name, run } of cleanups.reverse()) {
    // One step that hangs (a connection to a server that is already gone) must not keep the
    // servers we started running: give each step a bounded time, then go on.
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => { timer = setTimeout(() => resolve('late'), STEP_TIMEOUT_MS); });
    const outcome = await Promise.race([run().then(() => 'done' as const, (error: Error) => { say(`while stopping ${name}: ${error.message}`); return 'done' as const; }), late]);
    clearTimeout(timer);
    if (outcome === 'late') say(`${name} did not stop within ${STEP_TIMEOUT_MS / 1000} s; going on`);
  }
  say('stopped');
  process.exit(exitCode);
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void stop(0));
// A crash must still stop the servers we started (Temporal runs in its own process group).
process.on('uncaughtException', (error) => { say(`crashed: ${error.stack ?? error.message}`); void stop(1); });

// runtime.json names the supervised pids, so it is rewritten whenever a child comes back.
let runtimeInfo: Omit<RuntimeInfo, 'children'> | null = null;
const writeRuntime = async () => {
  if (!runtimeInfo) return;
  const pid = (key: ChildKey) => supervised[key]?.pid ?? null;
  await runtime.write({ ...runtimeInfo, children: { postgres: pid('postgres'), temporal: pid('temporal'), worker: pid('worker') } });
};
/** A supervised child: a restart rewrites runtime.json with its new pid. */
const superviseChild = (name: string, start: () => Promise<SupervisedChild>) => supervise({ name, start, log: say, onRestart: writeRuntime });
/** Records a supervisor (its pid goes into runtime.json) and stops it in its turn. */
async function keepRunning(key: ChildKey, name: string, made: Promise<Supervisor>): Promise<void> {
  const supervisor = await made;
  supervised[key] = supervisor;
  cleanups.push({ name, run: () => supervisor.stop() });
}

try {
  let databaseUrl = config.DATABASE_URL;
  if (!databaseUrl) {
    say('starting embedded PostgreSQL…');
    // Restarts demand the first start's port and data: every pool already points there.
    let postgres: EmbeddedPostgresHandle | undefined;
    await keepRunning('postgres', 'PostgreSQL', superviseChild('PostgreSQL', async () => {
      postgres = await startEmbeddedPostgres({ dataDir: path.join(config.DATA_DIR, 'postgres'), persistent: true, port: postgres?.port });
      return postgres;
    }));
    const admin = new pg.Client({ connectionString: postgres!.url });
    await admin.connect();
    const exists = await admin.query(`SELECT 1 FROM pg_database WHERE datname = 'wfapp'`);
    if (exists.rowCount === 0) await admin.query('CREATE DATABASE wfapp');
    await admin.end();
    databaseUrl = postgres!.urlFor('wfapp');
  }

  let temporalAddress = config.TEMPORAL_ADDRESS;
  let temporalUi = config.TEMPORAL_ADDRESS ? '(external Temporal: see its own UI)' : '';
  if (!temporalAddress) {
    say('starting Temporal dev server…');
    // Restarts reuse the frontend and UI ports (clients reconnect to the same address) and the
    // SQLite store, so workflows in flight carry on.
    let temporal: DevServerHandle | undefined;
    await keepRunning('temporal', 'Temporal', superviseChild('Temporal', async () => {
      temporal = await startTemporalDevServer({
        namespace: config.TEMPORAL_NAMESPACE,
        port: temporal ? Number(temporal.address.split(':').at(-1)) : undefined,
        uiPort: temporal?.uiUrl ? Number(new URL(temporal.uiUrl).port) : config.TEMPORAL_UI_PORT,
        dbFile: path.join(config.DATA_DIR, 'temporal.sqlite'), log: say,
      });
      return temporal;
    }));
    temporalAddress = temporal!.address;
    temporalUi = temporal!.uiUrl ?? '';
  }

  const db = createDb(databaseUrl, { poolSize: 2, applicationName: 'wfapp-start' });
  await migrateToLatest(db);
  const demo = await seedDemoTenant(db, config.DATA_DIR);
  await db.destroy();

  const deps = await connectAppDeps(config, { databaseUrl, temporalAddress }, say);
  cleanups.push({ name: 'API connections', run: () => deps.close() });
  if (!config.TEMPORAL_ADDRESS) {
    // A dev server that answers but cannot write (its store locked) is ended, and so restarted.
    const watchdog = watchWork({
      name: 'Temporal', log: say,
      probe: () => probeTemporalWrites(deps.temporal.connection, config.TEMPORAL_NAMESPACE, 5_000),
      isUp: () => !stopping && supervised.temporal?.pid != null,
      restart: () => { const pid = supervised.temporal?.pid; if (pid) process.kill(pid, 'SIGKILL'); },
    });
    cleanups.push({ name: 'Temporal watchdog', run: () => watchdog.stop() });
  }
  const workflowBundle = await bundleWorkflows();
  // Chosen before the workers start: they call the API (connector dispatch) at this port.
  // PORT=0 asks for any free port: picked here, so the workers know it too.
  const port = config.PORT !== 0 && (process.env.PORT || (await isPortFree(config.PORT))) ? config.PORT : await findFreePort();
  config = { ...config, PORT: port };
  if (config.START_WORKER === 'process') {
    // The production entry in a child process, on a bundle made once here (restarts skip webpack).
    const bundlePath = path.join(config.DATA_DIR, 'workflow-bundle.js');
    await writeFile(bundlePath, workflowBundle.code);
    const env = { ...process.env, DATABASE_URL: databaseUrl, TEMPORAL_ADDRESS: temporalAddress, DATA_DIR: config.DATA_DIR, LOG_LEVEL: config.LOG_LEVEL, WORKFLOW_BUNDLE_PATH: bundlePath, PORT: String(config.PORT) };
    // Its lines go out as `[worker] …`, beside ours (`[start] …`).
    const echo = (line: string) => process.stdout.write(`${line}\n`);
    await keepRunning('worker', 'worker', superviseChild('worker', () => startWorkerProcess(env, echo)));
  } else {
    // The workers share the API's Temporal connection, so the runs the API starts are handed to
    // them eagerly (worker/start.ts). Stopped in reverse: API, workers, then the connections.
    const connection = deps.temporal.connection;
    await keepRunning('worker', 'worker', superviseWorkers({
      connection, log: say, start: () => startWorkers({ config, databaseUrl, temporalAddress, workflowBundle, connection, log: say }),
    }));
  }
  const app = await buildApp(deps);
  cleanups.push({ name: 'API', run: () => app.close() });
  await app.listen({ port, host: config.HOST });
  const { port: boundPort } = app.server.address() as AddressInfo;
  const apiUrl = `http://${config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST}:${boundPort}`;

  runtimeInfo = { pid: process.pid, apiUrl, databaseUrl, temporalAddress, demo: { apiKey: demo.apiKey, documentId: demo.documentId, deploymentId: demo.deploymentId, teamId: demo.teamId } };
  await writeRuntime();
  cleanups.unshift({ name: 'runtime file', run: () => runtime.remove() });

  const seconds = ((performance.now() - startedAt) / 1000).toFixed(1);
  process.stdout.write([
    '',
    `  Workflow Application Service is ready (${seconds} s)`,
    '',
    `  API          ${apiUrl}`,
    `  API docs     ${apiUrl}/docs`,
    `  Readiness    ${apiUrl}/readyz`,
    `  Temporal UI  ${temporalUi}`,
    `  Demo API key ${demo.apiKey}`,
    `  Demo IDs     user ${demo.userId} · team ${demo.teamId} · project ${demo.projectId}`,
    '',
    '  Run the demo app (JSON, then streaming NDJSON):',
    `    curl -s -X POST ${apiUrl}/api/released-app/${demo.deploymentId}/run -H 'Authorization: Bearer ${demo.apiKey}' -H 'Content-Type: application/json' -d '{"inputs":{"name":"Ada","n":21},"stream":false}'`,
    `    curl -sN -X POST ${apiUrl}/api/released-app/${demo.deploymentId}/run -H 'Authorization: Bearer ${demo.apiKey}' -H 'Content-Type: application/json' -d '{"inputs":{"name":"Ada"}}'`,
    '',
    '  Run the app that waits for your approval (202 while it waits), then approve it (docs/long-runs.md):',
    `    RUN_ID=$(curl -s -X POST ${apiUrl}/api/released-app/${demo.approvalDeploymentId}/run -H 'Authorization: Bearer ${demo.apiKey}' -H 'Content-Type: application/json' -d '{"inputs":{"draft":"Thanks, see you Monday"},"stream":false}' | sed -E 's/.*"runId":"([^"]+)".*/\\1/')`,
    `    curl -s -X POST ${apiUrl}/api/runs/$RUN_ID/approvals/approve -H 'Authorization: Bearer ${demo.apiKey}' -H 'Content-Type: application/json' -d '{"approved":true}'`,
    `    curl -s ${apiUrl}/api/runs/$RUN_ID/events -H 'Authorization: Bearer ${demo.apiKey}'`,
    '',
    '  Operator CLI: npm run --silent cli -- <command>   ·   Ctrl-C stops everything',
    '',
  ].join('\n') + '\n');
} catch (error) {
  say(`failed to start: ${(error as Error).message}`);
  await stop(1);
}
