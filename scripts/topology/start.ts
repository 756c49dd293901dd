// The production layout on one machine, without Docker: PostgreSQL, the Temporal server on it with
// its Web UI, Redis, two API processes, two worker processes and nginx in front, each supervised
// (a process that dies comes back on the same address). `npm run topology` (scripts/topology.ts).
import { createWriteStream, existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createDb } from '../../shared/db/client.js';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../../shared/db/embedded.js';
import { migrateToLatest } from '../../shared/db/migrate.js';
import { findFreePort, findFreePortInRange, isPortFree, waitForPort } from '../../shared/ports.js';
import { supervise, type SupervisedChild, type Supervisor } from '../../shared/supervisor.js';
import {
  ensureTemporalServerBuild, registerNamespace, setupTemporalSchemas, temporalServerArgs, writeTemporalServerConfig, writeTemporalUiConfig,
  type PostgresTarget, type TemporalServerPorts,
} from '../../temporal/production-server.js';
import { bundleWorkflows } from '../../worker/bundle.js';
import { ensureTestDependencies, TEST_DEPENDENCIES } from '../ensure-test-dependencies.js';
import { seedDemoTenant, type DemoTenant } from '../dev/seed-demo.js';
import { startWorkerProcess } from '../dev/worker-process.js';
import { startChild, untilHttpOk } from './child.js';
import { renderStandaloneConfig } from './nginx-config.js';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const apiMain = fileURLToPath(new URL('../../api/main.ts', import.meta.url));
const NGINX = '/usr/sbin/nginx';
const REDIS = '/usr/bin/redis-server';

/** What every API and worker process is told (docker-compose.yml's x-app-env names the same; tested). */
export const SHARED_ENV_NAMES = ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE', 'REDIS_URL', 'PUBLIC_BASE_URL', 'LOG_LEVEL'] as const;
type SharedEnvName = (typeof SHARED_ENV_NAMES)[number];

export const API_PROCESSES = 2;
export const WORKER_PROCESSES = 2;

/** Every supervised process of the layout, in start order (stopped in reverse). */
export type TopologyRole = 'postgres' | 'temporal' | 'temporal-ui' | 'redis' | `worker-${number}` | `api-${number}` | 'nginx';

export interface TopologyRuntime {
  pid: number;
  /** The one origin callers use: nginx. */
  apiUrl: string;
  /** Each API process directly (tests reach one on purpose). */
  apiUrls: string[];
  uiUrl: string;
  databaseUrl: string;
  temporalAddress: string;
  redisUrl: string;
  demo: DemoTenant;
  children: Record<string, number | null>;
}

interface Ports { postgres?: number; temporal: TemporalServerPorts; ui: number; redis: number; nginx: number; apis: number[] }

/** A port asked for in the environment; unset means `fallback`, 0 means any free port (undefined). */
function wantedPort(value: string | undefined, fallback: number): number | undefined {
  if (value === undefined || value === '') return fallback;
  return Number(value) > 0 ? Number(value) : undefined;
}

/** Ports chosen at the first start and kept (ports.json), so a restarted layout comes back where it was. */
async function loadPorts(dir: string, apiCount: number): Promise<Ports> {
  const file = path.join(dir, 'ports.json');
  const kept = existsSync(file) ? (JSON.parse(await readFile(file, 'utf8')) as Ports) : null;
  const free = async (port: number | undefined, pick = findFreePort) => (port !== undefined && (await isPortFree(port)) ? port : pick());
  const freeList = async (ports: number[] | undefined, n: number, pick = findFreePort) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push(await free(ports?.[i], pick));
    return out;
  };
  // Temporal stores a cluster member's ports as SMALLINT: its ports stay below 32768, out of the kernel's ephemeral range.
  const temporalPort = () => findFreePortInRange(20_000, 32_767);
  const [frontend, frontendHttp, history, matching, worker, m0, m1, m2, m3, metrics, pprof] = await freeList(kept ? [
    kept.temporal.frontend, kept.temporal.frontendHttp, kept.temporal.history, kept.temporal.matching, kept.temporal.worker, ...kept.temporal.membership, kept.temporal.metrics, kept.temporal.pprof,
  ] : undefined, 11, temporalPort) as [number, number, number, number, number, number, number, number, number, number, number];
  const ports: Ports = {
    temporal: { frontend, frontendHttp, history, matching, worker, membership: [m0, m1, m2, m3], metrics, pprof },
    ui: await free(kept?.ui ?? wantedPort(process.env.TEMPORAL_UI_PORT, 8233)), redis: await free(kept?.redis), nginx: await free(kept?.nginx ?? wantedPort(process.env.PORT, 8080)),
    apis: await freeList(kept?.apis, apiCount),
  };
  await writeFile(file, JSON.stringify(ports));
  return ports;
}

export interface Topology {
  runtime: TopologyRuntime;
  /** Stops everything in order: nginx, APIs, workers, UI, Temporal, Redis, PostgreSQL. */
  stop(): Promise<void>;
  /** Stops restarting (a terminal's Ctrl-C reaches every child too) without stopping anything yet. */
  stopRestarting(): void;
}

export interface TopologyOptions {
  dir: string;
  log: (line: string) => void;
  env?: NodeJS.ProcessEnv;
  /** How many API and worker processes (default 2 each; the capacity bench also measures 1 + 1). */
  apis?: number;
  workers?: number;
}

export async function startTopology(options: TopologyOptions): Promise<Topology> {
  const { dir, log } = options;
  const [apiCount, workerCount] = [options.apis ?? API_PROCESSES, options.workers ?? WORKER_PROCESSES];
  const logs = path.join(dir, 'logs');
  await mkdir(logs, { recursive: true });
  const supervisors: Array<{ role: TopologyRole; supervisor: Supervisor }> = [];
  const runtimeFile = path.join(dir, 'runtime.json');
  let runtime: TopologyRuntime | null = null;
  const writeRuntime = async () => {
    if (!runtime) return;
    runtime.children = Object.fromEntries(supervisors.map(({ role, supervisor }) => [role, supervisor.pid]));
    const tmp = `${runtimeFile}.tmp`;
    await writeFile(tmp, JSON.stringify(runtime), { mode: 0o600 });
    await rename(tmp, runtimeFile);
  };
  const keep = async (role: TopologyRole, start: () => Promise<SupervisedChild>) => {
    const supervisor = await supervise({ name: role, start, log: (line) => log(line), onRestart: writeRuntime });
    supervisors.push({ role, supervisor });
  };
  const stopRestarting = () => { for (const { supervisor } of supervisors) supervisor.stopRestarting(); };
  const stop = async () => {
    stopRestarting();
    for (const { role, supervisor } of [...supervisors].reverse()) {
      await supervisor.stop().catch((error: Error) => log(`while stopping ${role}: ${error.message}`));
    }
    await rm(runtimeFile, { force: true });
  };

  try {
    await ensureTestDependencies({ dependencies: TEST_DEPENDENCIES.filter(({ binary }) => binary === NGINX || binary === REDIS) });
    const build = await ensureTemporalServerBuild(log);
    const ports = await loadPorts(dir, apiCount);
    const childLog = (role: string) => path.join(logs, `${role}.log`);

    // PostgreSQL: the service's database and Temporal's two, on one server with its own data folder.
    let postgres: EmbeddedPostgresHandle | undefined;
    await keep('postgres', async () => {
      postgres = await startEmbeddedPostgres({ dataDir: path.join(dir, 'postgres'), persistent: true, port: postgres?.port });
      return postgres;
    });
    const pgUrl = new URL(postgres!.url);
    const pgTarget: PostgresTarget = { host: '127.0.0.1', port: postgres!.port, user: decodeURIComponent(pgUrl.username), password: decodeURIComponent(pgUrl.password) };
    const admin = new pg.Client({ connectionString: postgres!.url });
    await admin.connect();
    if ((await admin.query(`SELECT 1 FROM pg_database WHERE datname = 'wfapp'`)).rowCount === 0) await admin.query('CREATE DATABASE wfapp');
    await admin.end();
    const databaseUrl = postgres!.urlFor('wfapp');

    // Temporal: schemas by its SQL tool, then the server on them, then the namespace and search attributes.
    await setupTemporalSchemas(build, pgTarget, log);
    const temporalAddress = `127.0.0.1:${ports.temporal.frontend}`;
    const namespace = options.env?.TEMPORAL_NAMESPACE ?? process.env.TEMPORAL_NAMESPACE ?? 'default';
    const temporalConfig = await writeTemporalServerConfig(path.join(dir, 'temporal'), { pg: pgTarget, ports: ports.temporal, maxConns: 20 });
    await keep('temporal', () => startChild({
      name: 'temporal', command: build.server, args: temporalServerArgs(temporalConfig), logFile: childLog('temporal'),
      ready: () => registerNamespace(temporalAddress, namespace), readyTimeoutMs: 180_000,
    }));
    const uiArgs = await writeTemporalUiConfig(path.join(dir, 'temporal-ui'), { temporalAddress, port: ports.ui, namespace });
    await keep('temporal-ui', () => startChild({
      name: 'temporal-ui', command: build.uiServer, args: uiArgs, logFile: childLog('temporal-ui'), ready: () => waitForPort('127.0.0.1', ports.ui, 30_000),
    }));
    await keep('redis', () => startChild({
      name: 'redis', command: REDIS, args: ['--bind', '127.0.0.1', '--port', String(ports.redis), '--save', '', '--appendonly', 'no'],
      logFile: childLog('redis'), ready: () => waitForPort('127.0.0.1', ports.redis, 10_000),
    }));
    const redisUrl = `redis://127.0.0.1:${ports.redis}`;

    const db = createDb(databaseUrl, { poolSize: 2, applicationName: 'wfapp-topology' });
    await migrateToLatest(db);
    const demo = await seedDemoTenant(db, dir);
    await db.destroy();

    // Every API and worker runs the production entry with the same environment but its port.
    const bundlePath = path.join(dir, 'workflow-bundle.js');
    await writeFile(bundlePath, (await bundleWorkflows()).code);
    const apiUrls = ports.apis.map((port) => `http://127.0.0.1:${port}`);
    const origin = `http://127.0.0.1:${ports.nginx}`;
    const shared: Record<SharedEnvName, string> = {
      DATABASE_URL: databaseUrl, TEMPORAL_ADDRESS: temporalAddress, TEMPORAL_NAMESPACE: namespace, REDIS_URL: redisUrl,
      PUBLIC_BASE_URL: options.env?.PUBLIC_BASE_URL ?? process.env.PUBLIC_BASE_URL ?? origin, LOG_LEVEL: options.env?.LOG_LEVEL ?? process.env.LOG_LEVEL ?? 'warn',
    };
    const env = (extra: Record<string, string>): NodeJS.ProcessEnv => ({ ...process.env, ...options.env, DATA_DIR: dir, ...shared, ...extra });
    for (let i = 1; i <= workerCount; i++) {
      const role = `worker-${i}` as const;
      // Workers call the API through nginx (connector dispatch), so either API may answer.
      const workerEnv = env({ WORKFLOW_BUNDLE_PATH: bundlePath, INTERNAL_API_URL: origin, PORT: String(ports.nginx) });
      await keep(role, () => startWorkerProcess(workerEnv, appendTo(childLog(role)), role));
    }
    for (const [index, port] of ports.apis.entries()) {
      const role = `api-${index + 1}` as const;
      let up = true;
      await keep(role, () => startChild({
        name: role, command: process.execPath, args: ['--import', 'tsx', apiMain], cwd: repoRoot, env: env({ PORT: String(port), HOST: '127.0.0.1' }),
        logFile: childLog(role), ready: () => untilHttpOk(`${apiUrls[index]}/readyz`, () => up), readyTimeoutMs: 90_000,
      }).catch((error: unknown) => { up = false; throw error; }));
    }
    const nginxPrefix = path.join(dir, 'nginx');
    await mkdir(path.join(nginxPrefix, 'logs'), { recursive: true });
    const nginxConf = path.join(nginxPrefix, 'nginx.conf');
    await writeFile(nginxConf, renderStandaloneConfig({
      listen: `127.0.0.1:${ports.nginx}`, upstreams: ports.apis.map((port) => `127.0.0.1:${port}`),
      prefix: nginxPrefix, workers: 1, runAsRoot: process.getuid?.() === 0,
    }));
    await keep('nginx', () => startChild({
      name: 'nginx', command: NGINX, args: ['-p', nginxPrefix, '-c', nginxConf, '-g', 'daemon off;'], logFile: childLog('nginx'),
      ready: () => untilHttpOk(`${origin}/readyz`), stopSignal: 'SIGQUIT',
    }));

    runtime = { pid: process.pid, apiUrl: origin, apiUrls, uiUrl: `http://127.0.0.1:${ports.ui}`, databaseUrl, temporalAddress, redisUrl, demo, children: {} };
    await writeRuntime();
    return { runtime, stop, stopRestarting };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** A log sink appending lines to a file (the workers' output, which startWorkerProcess hands us line by line). */
function appendTo(file: string): (line: string) => void {
  const stream = createWriteStream(file, { flags: 'a' });
  return (line) => { stream.write(`${line}\n`); };
}
