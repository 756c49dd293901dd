import { startPeriodic } from '../../shared/periodic.js';

// The supervisor restarts a child that exits. A child can also stay up and answer while it cannot
// do its work: a Temporal dev server whose SQLite store is locked answers reads and fails every
// write, and nothing heals it. The watchdog probes the work itself and, after a few failures in a
// row, has the child restarted (the supervisor brings it back on the same port and store).

export interface WorkWatchdogOptions {
  name: string;
  /** Resolves when the child can do its work (for Temporal: a write, temporal/readiness.ts). */
  probe(): Promise<void>;
  /** Whether the child is up now; while it is down (being restarted) nothing is probed. */
  isUp(): boolean;
  /** Ends the child so that its supervisor starts it again. */
  restart(reason: string): void | Promise<void>;
  log(line: string): void;
  intervalMs?: number;
  /** Consecutive failed probes before a restart: one slow answer under load is no reason. */
  failuresBeforeRestart?: number;
}

export function watchWork(options: WorkWatchdogOptions) {
  const failuresBeforeRestart = options.failuresBeforeRestart ?? 3;
  let failures = 0;
  return startPeriodic(async () => {
    if (!options.isUp()) { failures = 0; return; }
    try {
      await options.probe();
      failures = 0;
    } catch (error) {
      failures += 1;
      const reason = (error as Error).message.split('\n')[0]!;
      if (failures < failuresBeforeRestart) return;
      failures = 0;
      options.log(`${options.name} is up but cannot work (${failuresBeforeRestart} failed probes, last: ${reason}); restarting it`);
      await options.restart(reason);
    }
  }, { intervalMs: options.intervalMs ?? 10_000, onError: (error) => options.log(`${options.name} watchdog: ${error.message}`) });
}
