import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { describeExit, supervise, type SupervisedChild, type Supervisor } from './supervisor.js';

/** A real child process that idles until it is killed, as the supervisor sees PostgreSQL or Temporal. */
async function startIdleChild(): Promise<SupervisedChild> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  await new Promise<void>((resolve, reject) => { child.once('spawn', resolve); child.once('error', reject); });
  return {
    pid: child.pid!,
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

const isAlive = (pid: number) => { try { process.kill(pid, 0); return true; } catch { return false; } };

async function until<T>(probe: () => T | undefined | null | false, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('supervise', () => {
  const started: Supervisor[] = [];
  afterEach(async () => { for (const s of started.splice(0)) await s.stop(); });

  async function superviseIdle(extra: Partial<Parameters<typeof supervise>[0]> = {}) {
    const lines: string[] = [];
    const restarted: Array<number | null> = [];
    const supervisor = await supervise({
      name: 'Child', start: startIdleChild, log: (l) => lines.push(l), onRestart: (c) => { restarted.push(c.pid); },
      initialDelayMs: 50, maxDelayMs: 400, ...extra,
    });
    started.push(supervisor);
    return { supervisor, lines, restarted };
  }

  it('restarts a SIGKILLed child, logs why and when it is back, and reports the new pid', async () => {
    const { supervisor, lines, restarted } = await superviseIdle();
    const first = supervisor.pid!;
    expect(isAlive(first)).toBe(true);

    process.kill(first, 'SIGKILL');
    const second = await until(() => (supervisor.pid !== first ? supervisor.pid : null));
    expect(second).not.toBe(first);
    expect(isAlive(second)).toBe(true);
    await until(() => restarted.length === 1);
    expect(restarted).toEqual([second]);
    expect(lines).toEqual(['Child exited (signal SIGKILL); restarting in 0.05 s', `Child is back (pid ${second})`]);

    // And again: a second crash soon after waits twice as long.
    process.kill(second, 'SIGKILL');
    await until(() => restarted.length === 2);
    expect(lines[2]).toBe('Child exited (signal SIGKILL); restarting in 0.1 s');
    expect(isAlive(supervisor.pid!)).toBe(true);
  });

  it('keeps retrying a restart that fails, doubling the wait up to the cap, and logs each reason', async () => {
    let failuresLeft = -1; // the first start succeeds
    const { supervisor, lines } = await superviseIdle({
      start: async () => {
        if (failuresLeft-- > 0) throw new Error('port 5432 is still in use\nmore detail');
        return startIdleChild();
      },
      maxDelayMs: 200,
    });
    failuresLeft = 3;
    process.kill(supervisor.pid!, 'SIGKILL');
    await until(() => lines.some((l) => l.includes('is back')));
    expect(lines).toEqual([
      'Child exited (signal SIGKILL); restarting in 0.05 s',
      'Child did not restart (port 5432 is still in use); retrying in 0.1 s',
      'Child did not restart (port 5432 is still in use); retrying in 0.2 s',
      'Child did not restart (port 5432 is still in use); retrying in 0.2 s',
      `Child is back (pid ${supervisor.pid})`,
    ]);
  });

  it('waits the initial delay again once a restarted child has stayed up', async () => {
    const { supervisor, lines, restarted } = await superviseIdle({ stableAfterMs: 300 });
    process.kill(supervisor.pid!, 'SIGKILL');
    await until(() => restarted.length === 1);
    process.kill(supervisor.pid!, 'SIGKILL');
    await until(() => restarted.length === 2);
    await new Promise((r) => setTimeout(r, 400));
    process.kill(supervisor.pid!, 'SIGKILL');
    await until(() => restarted.length === 3);
    expect(lines.filter((l) => l.includes('exited')).map((l) => l.split('restarting in ')[1])).toEqual(['0.05 s', '0.1 s', '0.05 s']);
  });

  it('stop() stops the child and restarts nothing afterwards', async () => {
    const { supervisor, lines } = await superviseIdle();
    const pid = supervisor.pid!;
    await supervisor.stop();
    expect(isAlive(pid)).toBe(false);
    expect(supervisor.pid).toBeNull();
    await new Promise((r) => setTimeout(r, 200));
    expect(lines).toEqual([]);
  });

  it('stop() during the wait before a restart starts no new child', async () => {
    let starts = 0;
    const { supervisor, lines } = await superviseIdle({ start: () => { starts++; return startIdleChild(); }, initialDelayMs: 300 });
    process.kill(supervisor.pid!, 'SIGKILL');
    await until(() => lines.length === 1);
    await supervisor.stop();
    await new Promise((r) => setTimeout(r, 400));
    expect(starts).toBe(1);
    expect(supervisor.pid).toBeNull();
  });

  it('stopRestarting() leaves the child to its owner: an exit after it is not restarted', async () => {
    const { supervisor, lines } = await superviseIdle();
    const pid = supervisor.pid!;
    supervisor.stopRestarting();
    expect(isAlive(pid)).toBe(true);
    process.kill(pid, 'SIGKILL');
    await until(() => supervisor.pid === null);
    await new Promise((r) => setTimeout(r, 200));
    expect(lines).toEqual([]);
  });

  it('throws when the first start fails', async () => {
    await expect(supervise({ name: 'Child', start: () => Promise.reject(new Error('no binary')), log: () => {} })).rejects.toThrow('no binary');
  });

  it('describes process exits and in-process failures', () => {
    expect(describeExit({ value: { code: 1, signal: null } })).toBe('code 1');
    expect(describeExit({ value: { code: null, signal: 'SIGKILL' } })).toBe('signal SIGKILL');
    expect(describeExit({ error: new Error('connection refused\nstack') })).toBe('failed: connection refused');
    expect(describeExit({ value: undefined })).toBe('stopped');
  });
});
