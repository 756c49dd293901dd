// `npm run bench`: each benchmark measures a baseline and our code in the same run, on the same
// machine, and prints the ratio (absolute times on these shared machines are not stable).
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { sql } from 'kysely';
import { connectAppDeps } from '../../api/connect-deps.js';
import { loadConfig } from '../../shared/config.js';
import { createDb } from '../../shared/db/client.js';
import { startEmbeddedPostgres } from '../../shared/db/embedded.js';
import { migrateToLatest } from '../../shared/db/migrate.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { startTemporalDevServer } from '../../temporal/dev-server.js';
import { report, type Comparison } from './measure.js';
import { benchRequestBasics } from './basics.js';
import { benchOrders, runsPerSecondIn } from './orders.js';
import { benchRuns } from './runs.js';
import { asUsersRunRows, benchAsUsersRun } from './as-users-run.js';
import { startWorkerProcess, waitForWorker } from './worker-process.js';
import { benchSchedules } from './schedules.js';
import { benchClientConfig } from './client-config.js';
import { benchDownloads } from './downloads.js';
import { benchPaymentCallbacks } from './payment-callbacks.js';
import { benchProjectGraph, runProjectGraphBenchAlone } from './project-graph.js';
import { benchDataApi, runDataApiBenchAlone } from './data-api.js';
import { bundleWorkflows } from '../../worker/bundle.js';
import { startWorkers } from '../../worker/start.js';

// The in-process worker's SDK would log every state change into the tables printed below.
Runtime.install({ logger: new DefaultLogger('WARN') });

// `npm run bench -- --only public-config` runs sections 1–3 and the public configuration ones, without the run path.
const only = (section: string) => process.argv.includes('--only') && process.argv.includes(section);
const onlyPublicConfig = only('public-config');
// `npm run bench -- --only run-path`: section 4's run-path figures alone (no schedules or orders), for profiling.
const onlyRunPath = only('run-path');
// `npm run bench -- --only project-graph`: the graph search section alone, on a PostgreSQL of its own.
if (only('project-graph')) {
  await runProjectGraphBenchAlone();
  process.exit(0);
}
// `npm run bench -- --only data-api`: the data API's REST reads (issue 36) alone, on servers of their own.
if (only('data-api')) {
  await runDataApiBenchAlone();
  process.exit(0);
}

// `npm run bench -- --only topology`: the production layout's capacity (issue 43), 1 + 1 and 2 + 2 behind nginx.
if (only('topology')) {
  const { runTopologyBenchAlone } = await import('./topology.js');
  await runTopologyBenchAlone();
  process.exit(0);
}

// `npm run bench -- --only long-runs [--waiting N --approve N --timers N --callbacks N]`: runs that wait (issue 44), on servers of their own.
if (only('long-runs')) { const { runLongRunsBenchAlone } = await import('./long-runs.js'); await runLongRunsBenchAlone(); process.exit(0); }

// Realtime (issue 37) and run streams at its scale: on a PostgreSQL of its own; `--only realtime` runs it alone.
if (only('realtime') || !process.argv.includes('--only')) { const realtime = await import('./realtime.js'); await realtime.runRealtimeBenchAlone(); if (only('realtime')) process.exit(0); }

// 0. The run path as users run it: the README's `npm start` under an HTTP load generator, before
// the harness's servers start (they would share the cores). `--peer n8n` adds n8n beside it.
const peerArg = process.argv.indexOf('--peer');
const peer = peerArg > 0 ? process.argv[peerArg + 1] : null;
if (peer !== null && peer !== 'n8n') throw new Error(`--peer: only n8n is known, not ${peer}`);
const asUsersRun = onlyPublicConfig ? null : await benchAsUsersRun({ peer });

const workDir = await mkdtemp(path.join(os.tmpdir(), 'wfapp-bench-'));
await chmod(workDir, 0o755);
const [postgres, temporal] = await Promise.all([
  startEmbeddedPostgres({ dataDir: path.join(workDir, 'postgres'), persistent: false }),
  startTemporalDevServer({ namespace: 'default' }),
]);
const rows: Comparison[] = [];
const runRows: string[] = [];
const orderRows: string[] = [];
const downloadRows: string[] = [];
const graphRows: string[] = [];
try {
  const admin = createDb(postgres.url, { poolSize: 1 });
  await sql.raw('CREATE DATABASE bench').execute(admin);
  await admin.destroy();
  const databaseUrl = postgres.urlFor('bench');
  const config = loadConfig({ ...process.env, DATA_DIR: workDir, LOG_LEVEL: 'silent' });
  const deps = await connectAppDeps(config, { databaseUrl, temporalAddress: temporal.address });
  await migrateToLatest(deps.db);
  await upsertSiteSetting(deps.db, 'run.input_limit', { maxDepth: 16 });

  if (!onlyRunPath) {
    // 1–3. What every request pays: site settings, credential checks, the API's per-request overhead.
    rows.push(...(await benchRequestBasics(deps)));

    // 6. Public configuration (issue 21): a conditional client-config GET against a bare Fastify
    // route, and board downloads against nginx serving the same file.
    rows.push(...(await benchClientConfig(deps)));
    const downloads = await benchDownloads(deps, workDir);
    rows.push(...downloads.rows);
    downloadRows.push(...downloads.lines);
    // Payment callbacks (issue 22): verified callbacks per second against the bare signature check.
    rows.push(...(await benchPaymentCallbacks(deps)));
    // Project graph (issue 24): verified search over 100,000 facts against an indexed SELECT of the same rows.
    if (!onlyPublicConfig) graphRows.push(...(await benchProjectGraph(deps.db)));
    // Data API (issue 36): REST reads under row-level security against a plain Fastify route.
    if (!onlyPublicConfig) rows.push(...(await benchDataApi(deps)));
  }
  if (!onlyPublicConfig) {
    // 4. The run path (issue: run published apps), on the embedded default: like `npm start`, the
    // worker runs in the API's process on the API's connection (runs start eagerly; the bench process
    // is also the clients). Throughput is then measured again, and the schedules, with the worker as
    // its own process (`npm run worker`), as the compose file deploys it.
    const inProcess = await startWorkers({ config, databaseUrl, temporalAddress: temporal.address, workflowBundle: await bundleWorkflows(), connection: deps.temporal.connection });
    let worker: Awaited<ReturnType<typeof startWorkerProcess>> | undefined;
    try {
      await waitForWorker(deps);
      runRows.push(...(await benchRuns(deps, temporal.address, {
        temporalPid: temporal.pid,
        postgresPid: postgres.pid,
        async splitWorker() {
          await inProcess.shutdown();
          worker = await startWorkerProcess({ DATABASE_URL: databaseUrl, TEMPORAL_ADDRESS: temporal.address });
          await Promise.race([waitForWorker(deps), worker.exited]);
          return worker.pid;
        },
      })));
      if (!onlyRunPath) {
        runRows.push(...(await benchSchedules(deps)));

        // 5. Hardware order creation against the run endpoint, 50 concurrent, as section 4 measured
        // runs/s: against its figure with the worker in a process of its own, which still runs (and
        // polls `hardware-sales`, where each order starts its saga), so both go through the same topology.
        const orders = await benchOrders(deps, {
          label: 'section 4, worker in a process of its own',
          runsPerSecond: runsPerSecondIn(runRows, 'demo runs/s, 50 concurrent, worker in a process of its own'),
        }, [
          { name: 'bench process (callers and API)', pid: 'self' }, { name: 'worker', pid: worker?.pid ?? null },
          { name: 'Temporal', pid: temporal.pid }, { name: 'PostgreSQL', pid: postgres.pid },
        ]);
        rows.push(orders.comparison);
        orderRows.push(...orders.lines);
      }
    } finally {
      await inProcess.shutdown();
      await worker?.stop();
    }
  }
  await deps.close();
} finally {
  await temporal.stop();
  await postgres.stop();
  await rm(workDir, { recursive: true, force: true });
}
report(rows);
if (asUsersRun) {
  const harness = runRows.map((row) => /^\| demo runs\/s, 50 concurrent, 5 rounds[^|]*\| (\d+) runs\/s/.exec(row)?.[1]).find(Boolean);
  console.log('\n| run path as users run it | measured | baseline (same run) | ratio |\n|---|---|---|---|');
  for (const row of asUsersRunRows(asUsersRun, harness ? Number(harness) : null)) console.log(row);
}
console.log('\n| run path, in-memory harness (bench process is API, worker and callers) | measured | floor (same run) | ratio |\n|---|---|---|---|');
for (const row of runRows) console.log(row);
console.log('\n| hardware orders | measured | baseline (same run) | ratio |\n|---|---|---|---|');
for (const row of orderRows) console.log(row);
if (downloadRows.length > 0) console.log(`\n${downloadRows.join('\n')}`);
for (const row of graphRows) console.log(row);
