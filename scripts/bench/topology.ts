// Capacity of the production layout (issue 43, `npm run bench -- --only topology`): `npm run
// topology` with one API and one worker, then with two and two, behind nginx on the Temporal server
// on PostgreSQL; the demo app under the same HTTP load as the `npm start` rows; runs/s and CPU per
// run of every process, beside the engine's floor (a no-op workflow) on the same server, the two
// taking turns in short windows.
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startTopology } from '../topology/start.js';
import { cpuTotal, processTreeCpuMs, type CpuSnapshot } from './cpu.js';
import { startEngineFloor, takeTurnsWithFloor, type EngineFloor, type FloorRound } from './engine-floor.js';
import { medianBy } from './measure.js';
import { cpuLine, loadWindow, loadWith } from './npm-start.js';

const LOAD = { connections: 50, warmupSeconds: 5 };
/** Demo and floor take turns in short windows, so the machine's drift (other work, thermal) hits both alike. */
const ROUNDS = 3;
const WINDOW_SECONDS = 10;

interface LayoutFigures {
  name: string; runsPerSecond: number; p50: number; p99: number; failed: number; cpuPerRun: CpuSnapshot; floor: EngineFloor;
  /** Each round's demo/floor ratios of runs/s and of CPU per run, and their medians (the figures). */
  rounds: FloorRound[];
  median: FloorRound;
}

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
    // The engine: the Temporal server and the PostgreSQL it persists to.
    const engineCpuMs = () => { const now = cpu(); return { temporal: now.temporal ?? 0, postgres: now.postgres ?? 0 }; };
    const floor = await startEngineFloor({ ...LOAD, temporalAddress: runtime.temporalAddress, engineCpuMs });
    // The floor stops whatever happens (Promise.finally waits for it).
    const turns = await takeTurnsWithFloor(floor, {
      rounds: ROUNDS, seconds: WINDOW_SECONDS,
      async demo() {
        const { load, cpuPerRun, runsPerSecond } = await loadWindow(target, cpu, { connections: LOAD.connections, seconds: WINDOW_SECONDS });
        return { runsPerSecond, cpuPerRun, p50: load.latency.p50, p99: load.latency.p99, failed: load.non2xx + load.errors + load.timeouts };
      },
    }).finally(() => floor.stop());
    const { demos, floor: medianFloor, rounds, median } = turns;
    return {
      name: `${apis} API + ${workers} worker${workers > 1 ? 's' : ''}`, ...medianBy(demos, (d) => d.runsPerSecond),
      failed: demos.reduce((n, d) => n + d.failed, 0), floor: medianFloor, rounds, median,
    };
  } finally {
    await topology.stop();
    await rm(dir, { recursive: true, force: true });
  }
}


export async function runTopologyBenchAlone(): Promise<void> {
  const layouts = [await measureLayout(1, 1), await measureLayout(2, 2)];
  console.log('\n| production layout (npm run topology), demo app, 50 connections, 3 rounds of 10 s taking turns with the floor (medians) | runs/s | p50 / p99 | CPU per run (each process) | engine floor, same server: no-op workflows/s, CPU | demo vs floor |');
  console.log('|---|---|---|---|---|---|');
  for (const l of layouts) {
    console.log(`| ${l.name}, nginx, Temporal server on PostgreSQL | ${l.runsPerSecond.toFixed(0)}${l.failed ? ` (${l.failed} failed)` : ''} | ${l.p50} / ${l.p99} ms | ${cpuLine(l.cpuPerRun)} | ${l.floor.runsPerSecond.toFixed(0)}/s, ${cpuLine(l.floor.cpuPerRun)} | runs/s ${l.median.runs.toFixed(2)}× (goal ≥ 0.9×), CPU ${l.median.cpu.toFixed(2)}× (goal ≤ 1.1×); rounds ${l.rounds.map((r) => `${r.runs.toFixed(2)}/${r.cpu.toFixed(2)}`).join(' ')} |`);
  }
  const [one, two] = layouts as [LayoutFigures, LayoutFigures];
  console.log(`\n2 + 2 against 1 + 1 on this machine: ${(two.runsPerSecond / one.runsPerSecond).toFixed(2)}× the runs/s, ${(cpuTotal(two.cpuPerRun) / cpuTotal(one.cpuPerRun)).toFixed(2)}× the CPU per run`);
}
