// Section 0 of the bench: the run path as users run it (scripts/bench/npm-start.ts), and n8n beside
// it when asked (`--peer n8n`): the same work (webhook → set → respond) over the same load.
import { cpuTotal } from './cpu.js';
import { cpuLine, measureService, startNpmStart, type LoadFigures, type StartedService } from './npm-start.js';

export interface MeasuredService { name: string; figures: LoadFigures }

async function measured(start: () => Promise<StartedService>): Promise<MeasuredService> {
  const service = await start();
  try {
    return { name: service.name, figures: await measureService(service) };
  } finally {
    await service.stop();
  }
}

/** `npm start` (worker in the API's process), `START_WORKER=process` (the production layout), and the peer. */
export async function benchAsUsersRun(options: { peer: 'n8n' | null }): Promise<{ ours: MeasuredService[]; peer: MeasuredService | null }> {
  const ours = [await measured(() => startNpmStart()), await measured(() => startNpmStart({ START_WORKER: 'process' }))];
  let peer: MeasuredService | null = null;
  if (options.peer === 'n8n') {
    const { startN8n } = await import('./peer-n8n.js');
    peer = await measured(startN8n);
  }
  return { ours, peer };
}

/**
 * The table's rows. Ratios are against the peer when there is one, and otherwise against the
 * in-memory harness's demo runs/s measured later in the same bench run (`harnessRunsPerSecond`).
 */
export function asUsersRunRows(result: { ours: MeasuredService[]; peer: MeasuredService | null }, harnessRunsPerSecond: number | null): string[] {
  const rows: string[] = [];
  const peer = result.peer;
  for (const { name, figures } of result.ours) {
    const failed = figures.failed ? ` (${figures.failed} failed)` : '';
    const throughputBaseline = peer
      ? `${peer.name}: ${peer.figures.runsPerSecond.toFixed(0)} requests/s | ${(figures.runsPerSecond / peer.figures.runsPerSecond).toFixed(2)}× ${peer.name} (goal ≥ 1.3×)`
      : harnessRunsPerSecond ? `in-memory harness, same app: ${harnessRunsPerSecond.toFixed(0)} runs/s | ${(figures.runsPerSecond / harnessRunsPerSecond).toFixed(2)}× the harness` : '— | —';
    rows.push(`| ${name}: demo runs/s, 50 connections, 20 s (autocannon) | ${figures.runsPerSecond.toFixed(0)} runs/s${failed} | ${throughputBaseline} |`);
    rows.push(`| ${name}: latency at 50 connections, p50 / p99 | ${figures.p50} ms / ${figures.p99} ms | ${peer ? `${peer.name}: ${peer.figures.p50} ms / ${peer.figures.p99} ms` : '(the same runs)'} | p99 ${(figures.p99 / figures.p50).toFixed(2)}× p50 (goal ≤ 2×) |`);
    rows.push(`| ${name}: CPU per run, service and its databases | ${cpuLine(figures.cpuPerRun)} | ${peer ? `${peer.name}: ${cpuLine(peer.figures.cpuPerRun)} | ${(cpuTotal(figures.cpuPerRun) / cpuTotal(peer.figures.cpuPerRun)).toFixed(2)}× ${peer.name} (goal ≤ 1×)` : '— | —'} |`);
    if (figures.webhookRunsPerSecond !== null) {
      rows.push(`| ${name}: the same app through its webhook trigger, runs/s | ${figures.webhookRunsPerSecond.toFixed(0)} runs/s | the run route: ${figures.runsPerSecond.toFixed(0)} runs/s | ${(figures.webhookRunsPerSecond / figures.runsPerSecond).toFixed(2)}× (goal within 10%) |`);
    }
    if (figures.engineFloor) {
      const { floor, rounds, median } = figures.engineFloor;
      rows.push(`| ${name}: engine floor, a no-op workflow on the same Temporal, 50 concurrent, ${rounds.length} windows of 10 s taking turns with the demo's | ${floor.runsPerSecond.toFixed(0)} workflows/s, CPU ${cpuLine(floor.cpuPerRun)} (median window) | demo: ${figures.runsPerSecond.toFixed(0)} runs/s, CPU ${cpuTotal(figures.cpuPerRun).toFixed(1)} ms (the 20 s window) | medians of the pairs: runs/s ${median.runs.toFixed(2)}× the floor (goal ≥ 0.9×), CPU ${median.cpu.toFixed(2)}× (goal ≤ 1.1×); pairs ${rounds.map((r) => `${r.runs.toFixed(2)}/${r.cpu.toFixed(2)}`).join(' ')} |`);
    }
    rows.push(`| ${name}: sequential JSON latency p50 (1 connection) | ${figures.sequentialP50} ms | ${peer ? `${peer.name}: ${peer.figures.sequentialP50} ms | ${(figures.sequentialP50 / peer.figures.sequentialP50).toFixed(2)}× ${peer.name} (goal ≤ 0.5×)` : '— | —'} |`);
  }
  return rows;
}
