import { fork, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { link, mkdir } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { PerformanceObserver, constants as perfConstants, type PerformanceEntry } from 'node:perf_hooks';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { buildApp, type AppDeps } from '../../api/app.js';
import { registerBoardAsset } from '../../shared/public-config/board-assets.js';
import { processTreeCpuMs } from './cpu.js';
import type { Comparison } from './measure.js';
import { ensureNginx, startNginx } from './nginx.js';

// Issue 21: a 64 MiB registered board app downloaded whole and in 1 MiB ranges, 16 concurrent, from
// our route and from nginx serving the same file under the same URL path. The client is its own
// process (this file, forked), the same for every server: in the bench process it would share our
// server's event loop, while nginx would have a core of its own. On 2 cores, nginx with 1 worker is
// the like-for-like peer of the one Node process; `worker_processes auto` is printed too.

const MiB = 1024 * 1024;
const ASSET_BYTES = 64 * MiB;
const RANGE_BYTES = MiB;
const CONCURRENCY = 16;
const WARM_UP_MS = 1_000;
const ROUND_MS = 2_000;
const ROUNDS = 5;
const CLIENT_FLAG = '--download-bench-client';

type Scenario = 'whole' | 'range';
const SCENARIOS: { scenario: Scenario; label: string }[] = [
  { scenario: 'whole', label: 'whole 64 MiB file' },
  { scenario: 'range', label: '1 MiB ranges at random offsets' },
];

interface MeasureRequest { origin: string; path: string; scenario: Scenario; size: number; durationMs: number }
/** `windowBytes` arrived within the measured window; `totalBytes` also counts the bodies drained after it. */
interface MeasureResult { windowBytes: number; totalBytes: number; requests: number }
type ClientRequest = { id: number } & ({ kind: 'measure'; measure: MeasureRequest } | { kind: 'sha256'; origin: string; path: string });
type ClientReply = { id: number; error?: string; result?: MeasureResult | string };

interface Target { name: string; origin: string; cpuPid: number | 'self' | null }

export async function benchDownloads(deps: AppDeps, workDir: string): Promise<{ rows: Comparison[]; lines: string[] }> {
  // The store and the cache live in the bench's temp dir, and the cache holds the file with room to spare.
  const config = {
    ...deps.config,
    OBJECT_STORE_DIR: path.join(workDir, 'objects'),
    DOWNLOAD_CACHE_DIR: path.join(workDir, 'download-cache'),
    DOWNLOAD_CACHE_MAX_BYTES: Math.max(deps.config.DOWNLOAD_CACHE_MAX_BYTES, 2 * ASSET_BYTES),
  };
  const source = path.join(workDir, 'bench-download.dmg');
  await writeRandomFile(source, ASSET_BYTES);
  const asset = await registerBoardAsset({ db: deps.db, config }, { kind: 'board-app', target: 'macos-arm64', filePath: source, fileName: 'bench.dmg' });

  // nginx serves the same bytes under the same URL path (a hard link to the source: no third copy on disk).
  const nginxRoot = path.join(workDir, 'nginx-root');
  await mkdir(path.dirname(path.join(nginxRoot, asset.path)), { recursive: true });
  await link(source, path.join(nginxRoot, asset.path));
  await ensureNginx();

  const stops: (() => Promise<unknown>)[] = [];
  try {
    const app = await buildApp({ ...deps, config }, { logger: false });
    stops.push(() => app.close());
    await app.listen({ port: 0, host: '127.0.0.1' });
    const nginxOne = await startNginx({ prefix: path.join(workDir, 'nginx-1'), root: nginxRoot, workers: 1 });
    stops.push(nginxOne.stop);
    const nginxAuto = await startNginx({ prefix: path.join(workDir, 'nginx-auto'), root: nginxRoot, workers: 'auto' });
    stops.push(nginxAuto.stop);
    const client = await startClient();
    stops.push(client.stop);

    const targets: Target[] = [
      { name: 'nginx, 1 worker', origin: nginxOne.url, cpuPid: nginxOne.pid },
      { name: `nginx, auto (${os.availableParallelism()} workers)`, origin: nginxAuto.url, cpuPid: nginxAuto.pid },
      { name: 'our route', origin: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, cpuPid: 'self' },
    ];
    const [nginxOneTarget, nginxAutoTarget, ours] = targets as [Target, Target, Target];

    // The first GET fills our cache (fetch, verify, publish): that one-off is not what is compared.
    await client.sha256(ours.origin, asset.path);
    for (const target of targets) {
      const sha256 = await client.sha256(target.origin, asset.path);
      if (sha256 !== asset.sha256) throw new Error(`${target.name} served bytes with sha256 ${sha256}, registered ${asset.sha256}`);
    }

    const rows: Comparison[] = [];
    const table: string[] = [
      `| board download, ${CONCURRENCY} concurrent: MB/s (median of ${ROUNDS} × ${ROUND_MS / 1000} s) | ${targets.map((t) => t.name).join(' | ')} | ours / nginx 1 worker | ours / nginx auto |`,
      `|---|${targets.map(() => '---|').join('')}---|---|`,
    ];
    const cpuTable: string[] = [
      `| CPU ms per GiB sent: server / client | ${targets.map((t) => t.name).join(' | ')} |`,
      `|---|${targets.map(() => '---|').join('')}`,
    ];
    const gcLines: string[] = ['', 'Our process (API and bench) while our route was measured:'];
    for (const { scenario, label } of SCENARIOS) {
      const measured = await measureScenario(client, targets, { path: asset.path, scenario, size: asset.size });
      const mbps = (t: Target) => measured.get(t)!.medianMBps;
      const ratio = (baseline: Target) => (mbps(ours) / mbps(baseline)).toFixed(2);
      for (const baseline of [nginxOneTarget, nginxAutoTarget]) {
        rows.push({
          name: `board download, ${label}, ${CONCURRENCY} concurrent (MB/s)`,
          baseline: baseline.name, baselineOps: mbps(baseline),
          candidate: 'our route, cache warm', candidateOps: mbps(ours),
        });
      }
      table.push(`| ${label} | ${targets.map((t) => mbps(t).toFixed(0)).join(' | ')} | ${ratio(nginxOneTarget)}× | ${ratio(nginxAutoTarget)}× |`);
      cpuTable.push(`| ${label} | ${targets.map((t) => measured.get(t)!.cpu).join(' | ')} |`);
      gcLines.push(`- ${label}: ${measured.get(ours)!.gc}`);
    }
    const lines = [
      ...table, '',
      'Our route is measured with its cache already filled (one full GET before the rounds; the first fill is not compared).',
      `Same client for every server: undici Pool, ${CONCURRENCY} connections, in a process of its own; MB/s = 10^6 bytes/s. Server CPU: nginx's master and workers; ours: the bench process (API, idle bench code).`,
      '', ...cpuTable, ...gcLines,
    ];
    return { rows, lines };
  } finally {
    for (const stop of stops.reverse()) await stop().catch((error: unknown) => console.error('download bench cleanup:', error));
  }
}

interface ScenarioResult { medianMBps: number; cpu: string; gc: string }

/**
 * A warm-up of each server, then `ROUNDS` rounds in a rotating order, so drift hits every server
 * alike. Besides MB/s: CPU per GiB sent of the server and the client, and for our process (the
 * bench's), its garbage collections per GiB: buffers that die by the GB are where Node's time went.
 */
async function measureScenario(client: Client, targets: Target[], request: Omit<MeasureRequest, 'origin' | 'durationMs'>): Promise<Map<Target, ScenarioResult>> {
  for (const target of targets) await client.measure({ ...request, origin: target.origin, durationMs: WARM_UP_MS });
  const gcs: { startTime: number; duration: number; major: boolean }[] = [];
  const gcObserver = new PerformanceObserver((list) => {
    for (const { startTime, duration, detail } of list.getEntries() as Array<PerformanceEntry & { detail?: { kind?: number } }>) {
      gcs.push({ startTime, duration, major: detail?.kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR });
    }
  });
  gcObserver.observe({ entryTypes: ['gc'] });
  const sums = new Map(targets.map((t) => [t, { rates: [] as number[], server: 0, client: 0, bytes: 0, windows: [] as [number, number][] }]));
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const target of [...targets.slice(round % targets.length), ...targets.slice(0, round % targets.length)]) {
        const sum = sums.get(target)!;
        const [server, clientCpu, started] = [cpuMs(target.cpuPid), cpuMs(client.pid), performance.now()];
        const result = await client.measure({ ...request, origin: target.origin, durationMs: ROUND_MS });
        sum.windows.push([started, performance.now()]);
        sum.server += cpuMs(target.cpuPid) - server;
        sum.client += cpuMs(client.pid) - clientCpu;
        sum.bytes += result.totalBytes;
        sum.rates.push(result.windowBytes / 1e6 / (ROUND_MS / 1000));
      }
    }
    await new Promise((resolve) => setImmediate(resolve)); // the observer hears of the last GCs a turn later
  } finally {
    gcObserver.disconnect();
  }
  return new Map(targets.map((t) => {
    const { rates, server, client: clientMs, bytes, windows } = sums.get(t)!;
    const gib = bytes / (1024 * MiB);
    const perGiB = (ms: number) => (Number.isFinite(ms) ? (ms / gib).toFixed(0) : '?');
    const during = gcs.filter((e) => windows.some(([from, to]) => e.startTime >= from && e.startTime <= to));
    const major = during.filter((e) => e.major).length;
    const pauseMs = during.reduce((total, e) => total + e.duration, 0);
    rates.sort((a, b) => a - b);
    return [t, {
      medianMBps: rates[Math.floor(rates.length / 2)]!,
      cpu: `${perGiB(server)} / ${perGiB(clientMs)}`,
      gc: `${(major / gib).toFixed(1)} major GCs, ${perGiB(pauseMs)} ms of GC pauses per GiB`,
    }];
  }));
}

const cpuMs = (pid: number | 'self' | null): number => {
  if (pid === 'self') {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1000;
  }
  return (pid === null ? null : processTreeCpuMs(pid)) ?? Number.NaN;
};

async function writeRandomFile(file: string, size: number): Promise<void> {
  await pipeline(function* () { for (let written = 0; written < size; written += MiB) yield randomBytes(Math.min(MiB, size - written)); }, createWriteStream(file));
}

// --- The client: this file run as a child process, answering the bench over IPC. ---

interface Client {
  pid: number | null;
  measure(request: MeasureRequest): Promise<MeasureResult>;
  sha256(origin: string, path: string): Promise<string>;
  stop(): Promise<void>;
}

async function startClient(): Promise<Client> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), [CLIENT_FLAG], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
  let nextId = 0;
  const exited = new Promise<void>((resolve) => child.once('exit', () => {
    for (const { reject } of pending.values()) reject(new Error('the download bench client exited'));
    resolve();
  }));
  child.on('message', (reply: ClientReply) => {
    const waiter = pending.get(reply.id);
    pending.delete(reply.id);
    if (reply.error !== undefined) waiter?.reject(new Error(reply.error));
    else waiter?.resolve(reply.result);
  });
  const call = <T>(request: ClientRequest extends infer R ? (R extends unknown ? Omit<R, 'id'> : never) : never) => new Promise<T>((resolve, reject) => {
    const id = nextId++;
    pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
    child.send({ ...request, id });
  });
  return {
    pid: child.pid ?? null,
    measure: (measure) => call<MeasureResult>({ kind: 'measure', measure }),
    sha256: (origin, urlPath) => call<string>({ kind: 'sha256', origin, path: urlPath }),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await exited;
    },
  };
}

function runClient(): void {
  const pools = new Map<string, Pool>();
  const poolFor = (origin: string) => {
    let pool = pools.get(origin);
    if (!pool) pools.set(origin, (pool = new Pool(origin, { connections: CONCURRENCY, pipelining: 1 })));
    return pool;
  };
  const handle = async (request: ClientRequest): Promise<MeasureResult | string> => {
    if (request.kind === 'measure') return measure(poolFor(request.measure.origin), request.measure);
    const { statusCode, body } = await poolFor(request.origin).request({ path: request.path, method: 'GET' });
    if (statusCode !== 200) throw new Error(`GET ${request.origin}${request.path}: ${statusCode}`);
    const hash = createHash('sha256');
    for await (const chunk of body) hash.update(chunk as Buffer);
    return hash.digest('hex');
  };
  process.on('message', (request: ClientRequest) => {
    handle(request).then(
      (result) => process.send!({ id: request.id, result } satisfies ClientReply),
      (error: unknown) => process.send!({ id: request.id, error: error instanceof Error ? error.message : String(error) } satisfies ClientReply),
    );
  });
}

/**
 * `CONCURRENCY` workers download back to back until the deadline; bytes count while they arrive
 * within the window. Bodies in flight at the deadline are read to their end, uncounted, so every
 * response is checked and no connection is cut mid-body.
 */
async function measure(pool: Pool, { path: urlPath, scenario, size, durationMs }: MeasureRequest): Promise<MeasureResult> {
  const result: MeasureResult = { windowBytes: 0, totalBytes: 0, requests: 0 };
  const deadline = performance.now() + durationMs;
  const expected = scenario === 'whole' ? size : RANGE_BYTES;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (performance.now() < deadline) {
      const offset = Math.floor(Math.random() * (size / RANGE_BYTES)) * RANGE_BYTES;
      const headers = scenario === 'range' ? { range: `bytes=${offset}-${offset + RANGE_BYTES - 1}` } : undefined;
      const { statusCode, headers: responseHeaders, body } = await pool.request({ path: urlPath, method: 'GET', headers });
      const contentLength = Number(responseHeaders['content-length']);
      if (statusCode !== (scenario === 'range' ? 206 : 200) || contentLength !== expected) {
        await body.dump();
        throw new Error(`GET ${urlPath} (${scenario}): status ${statusCode}, content-length ${contentLength}, expected ${expected}`);
      }
      let received = 0;
      for await (const chunk of body) {
        received += (chunk as Buffer).length;
        if (performance.now() < deadline) result.windowBytes += (chunk as Buffer).length;
      }
      if (received !== expected) throw new Error(`GET ${urlPath} (${scenario}): ${received} bytes, expected ${expected}`);
      result.totalBytes += received;
      result.requests++;
    }
  }));
  return result;
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv.includes(CLIENT_FLAG)) runClient();
