// The run path as users run it: the README's `npm start` (embedded PostgreSQL, the Temporal dev
// server on its durable SQLite store, the worker in the API's process, its log level), started in
// a process group of its own, and driven over real HTTP by a load generator (autocannon) in a
// process of its own. `START_WORKER=process` measures the production layout (API and worker as
// separate processes) the same way.
import { execFile, spawn } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { findFreePort } from '../../shared/ports.js';
import { cpuTotal, processTreeCpuMs, type CpuSnapshot } from './cpu.js';
import { startEngineFloor, takeTurnsWithFloor, type EngineFloor, type EngineFloorLoad, type FloorRound } from './engine-floor.js';

const repoRoot = path.resolve(import.meta.dirname, '../..');
const autocannonBin = createRequire(import.meta.url).resolve('autocannon/autocannon.js');

/** What autocannon's --json prints, the parts read here. */
interface AutocannonResult {
  requests: { total: number; average: number };
  latency: { p50: number; p99: number };
  duration: number;
  non2xx: number;
  errors: number;
  timeouts: number;
}

export interface LoadTarget {
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** One autocannon run in a process of its own (so the callers' CPU is nobody's). */
export async function loadWith(target: LoadTarget, options: { connections: number; seconds: number }): Promise<AutocannonResult> {
  const args = [
    autocannonBin, '--json', '-c', String(options.connections), '-d', String(options.seconds), '-m', 'POST',
    ...Object.entries(target.headers).flatMap(([name, value]) => ['-H', `${name}=${value}`]), '-b', target.body,
    target.url,
  ];
  const { stdout } = await promisify(execFile)(process.execPath, args, { maxBuffer: 16 << 20 });
  return JSON.parse(stdout) as AutocannonResult;
}


export interface StartedService {
  name: string;
  target: LoadTarget;
  /** The same app behind its webhook trigger (spec §4.2), where the service has one. */
  webhookTarget?(): Promise<LoadTarget>;
  /** The engine's floor on this service's own Temporal server, warmed up (scripts/bench/engine-floor.ts). */
  engineFloor?(options: { connections: number; warmupSeconds: number }): Promise<EngineFloorLoad>;
  cpu(): CpuSnapshot;
  stop(): Promise<void>;
}

/** `npm start` on a fresh data folder, exactly as the README starts it; resolves once it printed "is ready". */
export async function startNpmStart(env: Record<string, string> = {}): Promise<StartedService> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'wfapp-bench-start-'));
  await chmod(dataDir, 0o755); // PostgreSQL, run as `postgres` under root, must enter it
  const childEnv: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: '0', TEMPORAL_UI_PORT: String(await findFreePort()), ...env };
  delete childEnv.DATABASE_URL;
  delete childEnv.TEMPORAL_ADDRESS;
  delete childEnv.LOG_LEVEL; // npm start's own default
  // To profile the start process: BENCH_START_NODE_FLAGS='--cpu-prof --cpu-prof-dir=/tmp/prof' runs
  // npm start's own command with those flags (node refuses --cpu-prof in NODE_OPTIONS).
  const nodeFlags = process.env.BENCH_START_NODE_FLAGS?.split(' ').filter(Boolean);
  const [command, args] = nodeFlags ? [process.execPath, [...nodeFlags, '--import', 'tsx', 'scripts/dev.ts']] : ['npm', ['start']];
  const child = spawn(command, args, { cwd: repoRoot, env: childEnv, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => { output = (output + chunk.toString()).slice(-20_000); });
  child.stderr.on('data', (chunk: Buffer) => { output = (output + chunk.toString()).slice(-20_000); });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 180_000;
  while (!output.includes('is ready') && child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  if (!output.includes('is ready')) {
    if (child.exitCode === null) process.kill(-child.pid!, 'SIGKILL');
    throw new Error(`npm start did not get ready:\n${output.slice(-3000)}`);
  }
  const runtime = JSON.parse(await readFile(path.join(dataDir, 'runtime.json'), 'utf8')) as {
    pid: number; apiUrl: string; temporalAddress: string; demo: { apiKey: string; documentId: string; deploymentId: string };
    children: { postgres: number | null; temporal: number | null; worker: number | null };
  };
  const cpu = (): CpuSnapshot => {
    const tree = (pid: number | null) => (pid === null ? 0 : processTreeCpuMs(pid) ?? 0);
    const [postgres, temporal, worker] = [tree(runtime.children.postgres), tree(runtime.children.temporal), tree(runtime.children.worker)];
    // The start process's tree holds every child: what is left is the API (and the inline worker).
    const service = tree(runtime.pid) - postgres - temporal - worker;
    return runtime.children.worker === null
      ? { 'API and worker': service, Temporal: temporal, PostgreSQL: postgres }
      : { API: service, worker, Temporal: temporal, PostgreSQL: postgres };
  };
  return {
    name: env.START_WORKER === 'process' ? 'npm start, START_WORKER=process' : 'npm start',
    target: {
      url: `${runtime.apiUrl}/api/released-app/${runtime.demo.deploymentId}/run`,
      headers: { authorization: `Bearer ${runtime.demo.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: { name: 'Ada', n: 21 }, stream: false }),
    },
    cpu,
    engineFloor: (options) => startEngineFloor({ ...options, temporalAddress: runtime.temporalAddress, engineCpuMs: () => ({ Temporal: cpu().Temporal ?? 0 }) }),
    async webhookTarget() {
      // The trigger's call budget (60 a minute by default) would refuse a load: raise it, as an operator would.
      await promisify(execFile)('npm', ['run', '--silent', 'cli', '--', 'settings', 'set', '--key', 'webhook_trigger.rate_limit', '--value', '{"perMinute":100000000}'], { cwd: repoRoot, env: childEnv });
      const rotated = await fetch(`${runtime.apiUrl}/api/webhook-triggers/by-document/${runtime.demo.documentId}/rotate-secret`, {
        method: 'POST', headers: { authorization: `Bearer ${runtime.demo.apiKey}` },
      });
      if (!rotated.ok) throw new Error(`rotate-secret: ${rotated.status} ${await rotated.text()}`);
      const trigger = await rotated.json() as { path: string; secret: string };
      await new Promise((r) => setTimeout(r, 2_000)); // running processes see a setting within moments
      return {
        url: `${runtime.apiUrl}${trigger.path}`,
        headers: { authorization: `Bearer ${trigger.secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Ada', n: 21 }),
      };
    },
    async stop() {
      if (child.exitCode === null) process.kill(-child.pid!, 'SIGINT');
      await exited;
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** One window of load on `target`, with each process's CPU per run over it (`cpu` read before and after). */
export async function loadWindow(target: LoadTarget, cpu: () => CpuSnapshot, options: { connections: number; seconds: number }) {
  const before = cpu();
  const load = await loadWith(target, options);
  const after = cpu();
  const cpuPerRun = Object.fromEntries(Object.keys(after).map((name) => [name, (after[name]! - (before[name] ?? 0)) / Math.max(1, load.requests.total)]));
  return { load, cpuPerRun, runsPerSecond: load.requests.total / load.duration };
}

export interface LoadFigures {
  runsPerSecond: number;
  p50: number;
  p99: number;
  failed: number;
  /** CPU ms per run of each process, over the timed load only (autocannon's warm-up excluded by a separate run). */
  cpuPerRun: CpuSnapshot;
  sequentialP50: number;
  /** Runs/s through the app's webhook trigger, same load, where the service has one. */
  webhookRunsPerSecond: number | null;
  /**
   * A no-op workflow on the same Temporal server at the same concurrency, taking turns with the
   * demo in short windows: each round's ratios, their medians, and the floor's median window.
   */
  engineFloor: { floor: EngineFloor; rounds: FloorRound[]; median: FloorRound } | null;
}

/** 50 connections (a warm-up, then the timed run, CPU read around it), the sequential JSON latency, the webhook trigger, and the engine's floor taking turns with the demo. */
export async function measureService(
  service: StartedService, options = { connections: 50, warmupSeconds: 5, seconds: 20, sequentialSeconds: 10, floorRounds: 3, floorSeconds: 10 },
): Promise<LoadFigures> {
  const demoWindow = (seconds: number) => loadWindow(service.target, service.cpu, { connections: options.connections, seconds });
  await loadWith(service.target, { connections: options.connections, seconds: options.warmupSeconds });
  const { load, cpuPerRun } = await demoWindow(options.seconds);
  const sequential = await loadWith(service.target, { connections: 1, seconds: options.sequentialSeconds });
  let webhookRunsPerSecond: number | null = null;
  if (service.webhookTarget) {
    const webhook = await service.webhookTarget();
    await loadWith(webhook, { connections: options.connections, seconds: options.warmupSeconds });
    const load = await loadWith(webhook, { connections: options.connections, seconds: options.seconds });
    if (load.non2xx + load.errors + load.timeouts > 0) throw new Error(`webhook trigger: ${load.non2xx} non-2xx, ${load.errors} errors, ${load.timeouts} timeouts`);
    webhookRunsPerSecond = load.requests.total / load.duration;
  }
  let engineFloor: LoadFigures['engineFloor'] = null;
  if (service.engineFloor) {
    const floor = await service.engineFloor({ connections: options.connections, warmupSeconds: options.warmupSeconds });
    const { demos: _, ...turns } = await takeTurnsWithFloor(floor, { rounds: options.floorRounds, seconds: options.floorSeconds, demo: () => demoWindow(options.floorSeconds) })
      .finally(() => floor.stop());
    engineFloor = turns;
  }
  return {
    engineFloor,
    runsPerSecond: load.requests.total / load.duration,
    p50: load.latency.p50, p99: load.latency.p99,
    failed: load.non2xx + load.errors + load.timeouts,
    cpuPerRun, sequentialP50: sequential.latency.p50, webhookRunsPerSecond,
  };
}

export const cpuLine = (cpu: CpuSnapshot) =>
  `${cpuTotal(cpu).toFixed(1)} ms (${Object.entries(cpu).map(([name, ms]) => `${name} ${ms.toFixed(1)}`).join(', ')})`;
