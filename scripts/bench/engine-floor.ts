// The engine's floor beside the run path's rows (issue 43): a no-op workflow (start, one workflow
// task, complete) on the same Temporal server as the `npm start` being measured, under the same
// concurrency and duration, with its CPU per workflow. The demo run cannot cost less than this
// while every run is a durable workflow; the ratio says how close it is.
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { startFloorWorker } from './floor-worker.js';
import type { CpuSnapshot } from './npm-start.js';

export interface EngineFloor { runsPerSecond: number; cpuPerRun: CpuSnapshot }

const selfCpuMs = () => { const { user, system } = process.cpuUsage(); return (user + system) / 1000; };

/**
 * `connections` callers each executing no-op workflows back to back, a warm-up and then the timed
 * window. CPU counted: this process (the callers and the worker, in place of the API and the
 * service's worker) and the Temporal server's (`temporalCpuMs`).
 */
export async function measureEngineFloor(options: { temporalAddress: string; temporalCpuMs(): number; connections: number; warmupSeconds: number; seconds: number }): Promise<EngineFloor> {
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
  try {
    await load(options.warmupSeconds);
    const [selfBefore, temporalBefore, startedAt] = [selfCpuMs(), options.temporalCpuMs(), performance.now()];
    const done = await load(options.seconds);
    const seconds = (performance.now() - startedAt) / 1000;
    const perRun = (ms: number) => ms / Math.max(1, done);
    return {
      runsPerSecond: done / seconds,
      cpuPerRun: { 'callers and worker': perRun(selfCpuMs() - selfBefore), Temporal: perRun(options.temporalCpuMs() - temporalBefore) },
    };
  } finally {
    await connection.close();
    await floor.stop();
  }
}
