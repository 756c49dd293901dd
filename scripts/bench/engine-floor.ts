// The engine's floor beside the run path's rows (issue 43): a no-op workflow (start, one workflow
// task, complete) on the same Temporal server as the service being measured, under the same
// concurrency, with its CPU per workflow. The demo run cannot cost less than this while every run
// is a durable workflow; the ratio says how close it is.
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { startFloorWorker } from './floor-worker.js';
import { cpuTotal, type CpuSnapshot } from './cpu.js';
import { median, medianBy } from './measure.js';

export interface EngineFloor { runsPerSecond: number; cpuPerRun: CpuSnapshot }

export interface EngineFloorLoad {
  /**
   * One timed window of `connections` callers executing no-op workflows back to back. CPU counted:
   * this process (the callers and the worker, in place of the API and the service's worker) and the
   * engine's own processes (`engineCpuMs`: the Temporal server, and the PostgreSQL it persists to
   * when it is not the dev server's embedded SQLite).
   */
  measure(seconds: number): Promise<EngineFloor>;
  stop(): Promise<void>;
}

const selfCpuMs = () => { const { user, system } = process.cpuUsage(); return (user + system) / 1000; };

/** A worker for the no-op workflow and its callers on the given server, warmed up once. */
export async function startEngineFloor(options: { temporalAddress: string; engineCpuMs(): CpuSnapshot; connections: number; warmupSeconds: number }): Promise<EngineFloorLoad> {
  const floor = await startFloorWorker(options.temporalAddress);
  const connection = await Connection.connect({ address: options.temporalAddress });
  const client = new Client({ connection });
  const load = async (seconds: number) => {
    const deadline = Date.now() + seconds * 1000;
    let done = 0;
    await Promise.all(Array.from({ length: options.connections }, async () => {
      while (Date.now() < deadline) {
        await client.workflow.execute('noopWorkflow', { taskQueue: floor.taskQueue, workflowId: `bench-floor-${randomUUID()}`, args: ['x'] });
        done += 1;
      }
    }));
    return done;
  };
  const stop = async () => { await connection.close(); await floor.stop(); };
  try {
    await load(options.warmupSeconds);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    async measure(seconds) {
      const [selfBefore, engineBefore, startedAt] = [selfCpuMs(), options.engineCpuMs(), performance.now()];
      const done = await load(seconds);
      const elapsed = (performance.now() - startedAt) / 1000;
      const [selfAfter, engineAfter] = [selfCpuMs(), options.engineCpuMs()];
      const perRun = (ms: number) => ms / Math.max(1, done);
      return {
        runsPerSecond: done / elapsed,
        cpuPerRun: {
          'callers and worker': perRun(selfAfter - selfBefore),
          ...Object.fromEntries(Object.keys(engineAfter).map((name) => [name, perRun(engineAfter[name]! - (engineBefore[name] ?? 0))])),
        },
      };
    },
    stop,
  };
}

/** One round's ratios of the service's demo window to the floor's window right after it. */
export interface FloorRound { runs: number; cpu: number }

/**
 * The service and its floor taking turns: `rounds` windows of the service's load (`demo`), each
 * followed by one of the floor's. The machine's speed drifts by a fifth within minutes here (the
 * floor alone measured 13.2–17.5 ms of CPU per workflow in runs minutes apart), so a ratio of two
 * windows far apart measures the drift; pairs of windows next to each other, and their median,
 * measure the service. `floor` is the floor's median window (by workflows/s).
 */
export async function takeTurnsWithFloor<D extends EngineFloor>(floor: EngineFloorLoad, options: { rounds: number; seconds: number; demo(): Promise<D> }): Promise<{ demos: D[]; floor: EngineFloor; rounds: FloorRound[]; median: FloorRound }> {
  const demos: D[] = [];
  const floors: EngineFloor[] = [];
  for (let round = 0; round < options.rounds; round++) {
    demos.push(await options.demo());
    floors.push(await floor.measure(options.seconds));
  }
  const rounds = demos.map((demo, i) => ({ runs: demo.runsPerSecond / floors[i]!.runsPerSecond, cpu: cpuTotal(demo.cpuPerRun) / cpuTotal(floors[i]!.cpuPerRun) }));
  const medians = { runs: median(rounds.map((r) => r.runs)), cpu: median(rounds.map((r) => r.cpu)) };
  return { demos, floor: medianBy(floors, (f) => f.runsPerSecond), rounds, median: medians };
}
