import { describe, expect, it } from 'vitest';
import { watchWork } from './work-watchdog.js';

const until = async (check: () => boolean, ms = 2_000) => {
  const deadline = Date.now() + ms;
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  return check();
};

describe('the work watchdog of npm start', () => {
  it('restarts a child that is up but fails its probe N times in a row, and only then', async () => {
    const lines: string[] = [];
    let probes = 0;
    const restarts: string[] = [];
    const watchdog = watchWork({
      name: 'Temporal', intervalMs: 5, failuresBeforeRestart: 3, isUp: () => true, log: (line) => lines.push(line),
      probe: async () => { probes += 1; throw new Error('SQLITE_BUSY: database is locked'); },
      restart: (reason) => { restarts.push(reason); },
    });
    try {
      expect(await until(() => restarts.length >= 1)).toBe(true);
      expect(probes).toBeGreaterThanOrEqual(3);
      expect(restarts[0]).toBe('SQLITE_BUSY: database is locked');
      expect(lines[0]).toBe('Temporal is up but cannot work (3 failed probes, last: SQLITE_BUSY: database is locked); restarting it');
    } finally {
      await watchdog.stop();
    }
    // Exactly one restart per three failures.
    expect(restarts.length).toBe(Math.floor(probes / 3));
  });

  it('a success resets the count: failures that are not consecutive restart nothing', async () => {
    let probes = 0;
    let restarts = 0;
    const watchdog = watchWork({
      name: 'Temporal', intervalMs: 5, failuresBeforeRestart: 3, isUp: () => true, log: () => {},
      probe: async () => { probes += 1; if (probes % 3 === 0) return; throw new Error('slow'); },
      restart: () => { restarts += 1; },
    });
    await until(() => probes >= 12);
    await watchdog.stop();
    expect(restarts).toBe(0);
  });

  it('probes nothing while the child is down (its supervisor is restarting it)', async () => {
    let probes = 0;
    let restarts = 0;
    let ticks = 0;
    const watchdog = watchWork({
      name: 'Temporal', intervalMs: 5, failuresBeforeRestart: 1, isUp: () => { ticks += 1; return false; }, log: () => {},
      probe: async () => { probes += 1; throw new Error('down'); },
      restart: () => { restarts += 1; },
    });
    await until(() => ticks >= 5);
    await watchdog.stop();
    expect([probes, restarts]).toEqual([0, 0]);
  });
});
