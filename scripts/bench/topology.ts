// Capacity of the production layout (issue 43, `npm run bench -- --only topology`): `npm run
// topology` with one API and one worker, then with two and two, behind nginx on the Temporal server
// on PostgreSQL; the demo app under the same HTTP load as the `npm start` rows; runs/s and CPU per
// run of every process, beside the engine's floor (a no-op workflow) on the same server in the same run.
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startTopology } from '../topology/start.js';
import { processTreeCpuMs } from './cpu.js';
import { measureEngineFloor, type EngineFloor } from './engine-floor.js';
import { cpuLine, loadWith, type CpuSnapshot } from './npm-start.js';

const LOAD = { connections: 50, warmupSeconds: 5, seconds: 20 };

interface LayoutFigures { name: string; runsPerSecond: number; p50: number; p99: number; failed: number; cpuPerRun: CpuSnapshot; floor: EngineFloor }

async function measureLayout(apis: number, workers: number): Promise<LayoutFigures> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'wfapp-bench-topology-'));
  await chmod(dir, 0o755); // PostgreSQL runs as `postgres` under root and must enter it
  const topology = await startTopology({ dir, log: () => {}, apis, workers, env: { LOG_LEVEL: 'warn' } });
  try {
    const { runtime } = topology;
    const cpu = (): CpuSnapshot => {
      // Each role's process tree: nginx's workers, PostgreSQL's backends, the roles' children.
      const roles = Object.entries(runtime.children).filter(([role]) => role !== 'temporal-ui');
      return Object.fromEntries(roles.map(([role, pid]) => [role, pid === null ? 0 : processTreeCpuMs(pid) ?? 0]));
    };
    const target = {
      url: `${runtime.apiUrl}/api/released-app/${runtime.demo.deploymentId}/run`,
      headers: { authorization: `Bearer ${runtime.demo.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: { name: 'Ada', n: 21 }, stream: false }),
    };
    await loadWith(target, { connections: LOAD.connections, seconds: LOAD.warmupSeconds });
    const before = cpu();
    const load = await loadWith(target, { connections: LOAD.connections, seconds: LOAD.seconds });
    const after = cpu();
    const total = Math.max(1, load.requests.total);
    const cpuPerRun = Object.fromEntries(Object.keys(after).map((role) => [role, (after[role]! - (before[role] ?? 0)) / total]));
    const temporalPid = runtime.children.temporal!;
    const floor = await measureEngineFloor({ ...LOAD, temporalAddress: runtime.temporalAddress, temporalCpuMs: () => processTreeCpuMs(temporalPid) ?? 0 });
    return {
      name: `${apis} API + ${workers} worker${workers > 1 ? 's' : ''}`, runsPerSecond: load.requests.total / load.duration, p50: load.latency.p50, p99: load.latency.p99,
      failed: load.non2xx + load.errors + load.timeouts, cpuPerRun, floor,
    };
  } finally {
    await topology.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

const sum = (cpu: CpuSnapshot) => Object.values(cpu).reduce((a, b) => a + b, 0);

export async function runTopologyBenchAlone(): Promise<void> {
  const layouts = [await measureLayout(1, 1), await measureLayout(2, 2)];
  console.log('\n| production layout (npm run topology), demo app, 50 connections, 20 s | runs/s | p50 / p99 | CPU per run (each process) | engine floor, same server: no-op workflows/s, CPU | demo vs floor |');
  console.log('|---|---|---|---|---|---|');
  for (const l of layouts) {
    console.log(`| ${l.name}, nginx, Temporal server on PostgreSQL | ${l.runsPerSecond.toFixed(0)}${l.failed ? ` (${l.failed} failed)` : ''} | ${l.p50} / ${l.p99} ms | ${cpuLine(l.cpuPerRun)} | ${l.floor.runsPerSecond.toFixed(0)}/s, ${cpuLine(l.floor.cpuPerRun)} | runs/s ${(l.runsPerSecond / l.floor.runsPerSecond).toFixed(2)}× (goal ≥ 0.9×), CPU ${(sum(l.cpuPerRun) / sum(l.floor.cpuPerRun)).toFixed(2)}× (goal ≤ 1.1×) |`);
  }
  const [one, two] = layouts as [LayoutFigures, LayoutFigures];
  console.log(`\n2 + 2 against 1 + 1 on this machine: ${(two.runsPerSecond / one.runsPerSecond).toFixed(2)}× the runs/s, ${(sum(two.cpuPerRun) / sum(one.cpuPerRun)).toFixed(2)}× the CPU per run`);
}
