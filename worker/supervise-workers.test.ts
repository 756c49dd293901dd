import type { NativeConnection } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import type { RunningWorkers } from './start.js';
import { superviseWorkers } from './supervise-workers.js';

/** A connection whose health check answers or fails on demand (the probe before each start). */
function fakeConnection(state: { up: boolean }) {
  return {
    withDeadline: (_deadline: number, fn: () => Promise<unknown>) => fn(),
    workflowService: { getSystemInfo: async () => { if (!state.up) throw new Error('14 UNAVAILABLE: tcp connect error'); return {}; } },
  } as unknown as NativeConnection;
}

/** Workers whose `done` the test settles, as a real set's rejects when a Worker fails. */
function fakeWorkers() {
  let fail!: (error: Error) => void;
  let finish!: () => void;
  const done = new Promise<void>((resolve, reject) => { fail = reject; finish = resolve; });
  const running = { workers: {} as RunningWorkers['workers'], done, shutdown: async () => { finish(); await done; } };
  return { running, fail };
}

const until = async (probe: () => boolean) => {
  for (let i = 0; i < 500 && !probe(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(probe()).toBe(true);
};

describe('superviseWorkers', () => {
  it('creates the workers again when they fail, once Temporal answers, and not after stop()', async () => {
    const server = { up: true };
    const sets: Array<ReturnType<typeof fakeWorkers>> = [];
    const lines: string[] = [];
    const supervisor = await superviseWorkers({
      connection: fakeConnection(server), log: (l) => lines.push(l),
      start: async () => { const set = fakeWorkers(); sets.push(set); return set.running; },
    });
    expect(sets).toHaveLength(1);
    expect(supervisor.pid).toBeNull(); // in-process: nothing to kill

    server.up = false;
    sets[0]!.fail(new Error('Poll failure: Namespace default is not found'));
    await until(() => lines.some((l) => l.startsWith('worker did not restart')));
    expect(sets).toHaveLength(1); // no workers made while Temporal does not answer
    server.up = true;
    await until(() => lines.includes('worker is back'));
    expect(sets).toHaveLength(2);
    expect(lines[0]).toBe('worker exited (failed: Poll failure: Namespace default is not found); restarting in 0.5 s');
    expect(lines[1]).toMatch(/^worker did not restart \(14 UNAVAILABLE: tcp connect error\); retrying in 1 s$/);

    await supervisor.stop();
    await sets[1]!.running.done; // stop() shut the second set down
    await new Promise((r) => setTimeout(r, 600));
    expect(sets).toHaveLength(2);
  });
});
