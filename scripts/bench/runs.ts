import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import Fastify from 'fastify';
import { Pool } from 'undici';
import { buildApp } from '../../api/app.js';
import type { AppDeps } from '../../api/deps.js';
import { createDocument } from '../../shared/documents/service.js';
import { publishDocument } from '../../shared/publishing/service.js';
import { grantCredits } from '../../shared/billing/service.js';
import { createApiKey } from '../../shared/credentials/api-keys.js';
import { createProject, createTeam, createUser } from '../../shared/identity/service.js';
import { taskQueueName } from '../../temporal/task-queues.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import { startFloorWorker } from './floor-worker.js';
import { CpuAccount, cpuPerOperation, type CpuSource } from './cpu.js';
import { concurrentOpsPerSecond, concurrentRound, median } from './measure.js';

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
async function timings(n: number, fn: () => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < Math.min(10, n); i++) await fn();
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  return out.sort((a, b) => a - b);
}

/** Runs first-byte-client.ts as its own process: its sorted samples, one array per target. */
async function sampleFirstBytes(input: { targets: Array<{ url: string; headers: Record<string, string> }>; body: string; samples: number; pauseMs: number }): Promise<number[][]> {
  const script = fileURLToPath(new URL('./first-byte-client.ts', import.meta.url));
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', script, JSON.stringify(input)], { maxBuffer: 1 << 20 });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as number[][];
}

const chain = (length: number) => ({
  blocks: Array.from({ length }, (_, i) => ({ id: `b${i}`, type: 'transform', name: `b${i}`, config: { expression: i === 0 ? '1' : `$b${i - 1} + 1` } })),
  edges: Array.from({ length: length - 1 }, (_, i) => ({ from: `b${i}`, to: `b${i + 1}` })),
});
const demo = {
  blocks: [
    { id: 'q', type: 'input', name: 'name', config: { valueType: 'string', required: true } },
    { id: 'x', type: 'transform', name: 'shape', config: { expression: "{ 'greeting': 'hello ' & $q }" } },
    { id: 'o', type: 'output', name: 'result', config: { value: '{{x}}' } },
  ],
  edges: [{ from: 'q', to: 'x' }, { from: 'x', to: 'o' }],
};

/** Where the bench runs: the servers' process ids (for their CPU time) and how to split the worker off. */
export interface RunTopology {
  temporalPid: number | null;
  postgresPid: number | null;
  /** Moves the worker to a process of its own; returns its pid. */
  splitWorker(): Promise<number | null>;
}

/** Throughput rounds of this many runs, 50 in flight: against the ceiling, a warm-up of each and five pairs; split off, a warm-up and three (measure.ts). */
const ROUND = 300;
const PAIRS = 5;
const ROUNDS = 3;

/**
 * Run-path benchmarks of the app-runs issue, each with its floor measured in the same run. They run
 * against the worker the caller started; `splitWorker` then moves it to a process of its own, for
 * the throughput of a split deployment.
 */
export async function benchRuns(deps: AppDeps, temporalAddress: string, topology: RunTopology): Promise<string[]> {
  const { db } = deps;
  const user = await createUser(db, { email: `bench-${randomUUID()}@example.com` });
  const team = await createTeam(db, { ownerId: user.id, name: 'Bench' });
  await grantCredits(db, { teamId: team.id, amountMilli: 100_000_000 });
  const project = await createProject(db, { teamId: team.id, name: 'Bench' });
  const { token } = await createApiKey(db, { teamId: team.id, createdBy: user.id, name: 'bench' });
  const operator = { kind: 'operator' } as const;
  const publish = async (graph: object) => (await publishDocument(db, operator, (await createDocument(db, operator, { projectId: project.id, name: 'b', graph })).id, {})).id;
  const [demoId, chain1, chain21] = [await publish(demo), await publish(chain(1)), await publish(chain(21))];

  const app = await buildApp(deps, { logger: false });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  // The first-byte floor: a bare Fastify route taking the same request (a POST with the same JSON body).
  const bare = Fastify();
  bare.post('/run', async (request) => ({ ok: true, inputs: (request.body as { inputs?: unknown }).inputs }));
  await bare.listen({ port: 0, host: '127.0.0.1' });
  const bareUrl = `http://127.0.0.1:${(bare.server.address() as AddressInfo).port}/run`;
  const runBody = JSON.stringify({ inputs: { name: 'Ada' } });

  // The callers are undici's request API on a keep-alive pool, as load generators are lean: WHATWG
  // fetch cost this process 3-4 ms of CPU per call, on the same 2 cores as the service it measures.
  const callers = new Pool(base, { connections: 50 });
  const runJson = (deploymentId: string) => () => callers.request({
    path: `/api/released-app/${deploymentId}/run`, method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ inputs: { name: 'Ada' }, stream: false }),
  }).then(async (r) => {
    const result = await r.body.json() as { status?: string };
    if (result.status !== 'completed') throw new Error(`a bench run did not complete: ${JSON.stringify(result)}`);
  });

  const bareBackToBack = await timings(300, () => fetch(bareUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: runBody }).then((r) => r.text()));
  const trivialWorkflow = await timings(60, () => deps.temporal.client.workflow.execute('platformProbeWorkflow', {
    taskQueue: taskQueueName('platform', deps.config.TEMPORAL_TASK_QUEUE_SUFFIX), workflowId: workflowIds.platformProbe(randomUUID()),
    args: [{ probeId: randomUUID(), note: 'bench' }],
  }));
  const demoTimes = await timings(100, runJson(demoId));
  // First bytes are sampled 100 ms apart, each on a quiet system (a run's tail on the worker and the
  // Temporal server is not the next request's), by a client process of its own. The floor is sampled
  // alike, interleaved: after 100 ms idle this machine answers even the bare route 3-4× slower than
  // back-to-back.
  const [bareTimes, ttfb] = await sampleFirstBytes({
    targets: [{ url: bareUrl, headers: {} }, { url: `${base}/api/released-app/${demoId}/run`, headers: { authorization: `Bearer ${token}` } }],
    body: runBody, samples: 100, pauseMs: 100,
  }) as [number[], number[]];
  const one = await timings(40, runJson(chain1));
  const twentyOne = await timings(40, runJson(chain21));

  // Throughput, 50 callers at once, against its ceiling on this Temporal server: a workflow that
  // does nothing (start, one workflow task, complete), started and awaited by 50 callers of a client.
  // The two take turns, round by round after a warm-up round of each, and the figure is the median
  // of the pairs' ratios: this shared machine's speed drifts by a quarter within minutes, and a
  // ceiling measured a minute before its runs moved the ratio by as much. Each with the CPU time
  // per run of every process over its timed rounds.
  const servers: CpuSource[] = [{ name: 'Temporal', pid: topology.temporalPid }, { name: 'PostgreSQL', pid: topology.postgresPid }];
  const floor = await startFloorWorker(temporalAddress);
  const noop = () => deps.temporal.client.workflow.execute('noopWorkflow', { taskQueue: floor.taskQueue, workflowId: `bench-noop-${randomUUID()}`, args: ['x'] });
  // Each run's latency under that load too: p99 against p50 shows whether some runs wait in an unfair queue.
  const underLoad: number[] = [];
  const demoRun = runJson(demoId);
  const timedRun = async () => {
    const started = performance.now();
    await demoRun();
    underLoad.push(performance.now() - started);
  };
  const noopCpu = new CpuAccount([{ name: 'bench process (client and worker)', pid: 'self' }, servers[0]!]);
  const demoCpu = new CpuAccount([{ name: 'bench process (callers, API and worker)', pid: 'self' }, ...servers]);
  // The warm-up rounds pay for the JIT and the caches: left out of every figure.
  await concurrentRound(noop, ROUND, 50);
  await concurrentRound(timedRun, ROUND, 50);
  underLoad.length = 0;
  const pairs: Array<{ noop: number; demo: number }> = [];
  for (let round = 0; round < PAIRS; round++) {
    const noopRate = await noopCpu.measure(ROUND, () => concurrentRound(noop, ROUND, 50));
    pairs.push({ noop: noopRate, demo: await demoCpu.measure(ROUND, () => concurrentRound(timedRun, ROUND, 50)) });
  }
  await floor.stop();
  const [noopRate, demoRate, ratio] = [median(pairs.map((p) => p.noop)), median(pairs.map((p) => p.demo)), median(pairs.map((p) => p.demo / p.noop))];
  const loaded = underLoad.sort((a, b) => a - b);
  const workerPid = await topology.splitWorker();
  const splitThroughput = await cpuPerOperation([{ name: 'bench process (callers and API)', pid: 'self' }, { name: 'worker', pid: workerPid }, ...servers],
    ROUND * (ROUNDS + 1), () => concurrentOpsPerSecond(demoRun, ROUND, 50, ROUNDS));

  await callers.close();
  await app.close();
  await bare.close();
  const ms = (v: number) => `${v.toFixed(1)} ms`;
  const p50 = (t: number[]) => percentile(t, 0.5);
  return [
    `| demo app JSON p50 / p99 | ${ms(p50(demoTimes))} / ${ms(percentile(demoTimes, 0.99))} | floor: trivial workflow (one DB activity) p50 ${ms(p50(trivialWorkflow))} | ${(p50(demoTimes) / p50(trivialWorkflow)).toFixed(2)}× (goal ≤ 1.5×) |`,
    `| demo app NDJSON first byte p50 | ${ms(p50(ttfb))} | floor: bare Fastify POST route, same body, sampled alike, p50 ${ms(p50(bareTimes))} (back-to-back ${ms(p50(bareBackToBack))}) | ${(p50(ttfb) / p50(bareTimes)).toFixed(2)}× (goal ≤ 3×) |`,
    `| per pure block | ${ms((p50(twentyOne) - p50(one)) / 20)} | (t(21-block chain) ${ms(p50(twentyOne))} − t(1-block) ${ms(p50(one))}) / 20 | goal ≤ 1 ms |`,
    `| demo runs/s, 50 concurrent, ${PAIRS} rounds of 300 taking turns with the ceiling's | ${demoRate.toFixed(0)} runs/s (median) | ceiling: no-op workflow, 50 concurrent, ${noopRate.toFixed(0)} workflows/s (median) | ${ratio.toFixed(2)}× of the ceiling, median of the rounds' ratios ${pairs.map((p) => (p.demo / p.noop).toFixed(2)).join(' ')} (goal ≥ 0.85×) |`,
    `| demo latency at 50 concurrent, p50 / p99 | ${ms(p50(loaded))} / ${ms(percentile(loaded, 0.99))} | (the same runs) | p99 ${(percentile(loaded, 0.99) / p50(loaded)).toFixed(2)}× p50 (goal ≤ 2×) |`,
    `| demo runs/s, 50 concurrent, worker in a process of its own | ${splitThroughput.result.toFixed(0)} runs/s | (same ceiling) | ${(splitThroughput.result / noopRate).toFixed(2)}× of the ceiling's median |`,
    `| CPU per demo run, in-process worker | ${demoCpu.perOperation} | CPU per no-op workflow: ${noopCpu.perOperation} | |`,
    `| CPU per demo run, worker split off | ${splitThroughput.perOperation} | | |`,
  ];
}
