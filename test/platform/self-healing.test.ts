import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { RuntimeInfo } from '../../scripts/dev/runtime-file.js';
import { findFreePort } from '../../shared/ports.js';
import { until } from '../harness/until.js';

/** Gone, or a zombie nobody reaped yet: either way it runs no more. */
const isRunning = (pid: number) => {
  try {
    const line = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return line.slice(line.lastIndexOf(')') + 2, line.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
};

/** Processes whose command line mentions `needle` (PostgreSQL and Temporal name the data folder). */
const processesMentioning = (needle: string) =>
  execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' }).split('\n').filter((l) => l.includes(needle) && !l.includes('ps -eo'));

async function readRuntime(file: string): Promise<RuntimeInfo | null> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as RuntimeInfo;
  } catch {
    return null; // not written yet (a rename makes every write whole, so never half a file)
  }
}

async function isReady(apiUrl: string): Promise<boolean> {
  try {
    return (await fetch(`${apiUrl}/readyz`, { signal: AbortSignal.timeout(5_000) })).status === 200;
  } catch {
    return false;
  }
}

/** The demo app, as the curl line `npm start` prints runs it. */
async function runDemo(info: RuntimeInfo): Promise<{ status: number; body: { status?: string; sessions?: Array<{ output: unknown }> } }> {
  const response = await fetch(`${info.apiUrl}/api/released-app/${info.demo.deploymentId}/run`, {
    method: 'POST', headers: { authorization: `Bearer ${info.demo.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ inputs: { name: 'Ada', n: 21 }, stream: false }), signal: AbortSignal.timeout(30_000),
  });
  return { status: response.status, body: await response.json() as never };
}

// Issue 18 item 4, "the embedded stack heals": SIGKILL each child `npm start` supervises, in turn;
// each comes back (same address, same data), the API is ready again and the demo app runs.
describe.runIf(process.platform === 'linux')('npm start heals itself', () => {
  let dataDir = '';
  afterAll(async () => { if (dataDir) await rm(dataDir, { recursive: true, force: true }); });

  it('restarts PostgreSQL, Temporal and the worker process after SIGKILL, and stops cleanly on SIGTERM', async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'wfapp-heal-'));
    await chmod(dataDir, 0o755); // PostgreSQL (run as `postgres` under root) must enter it
    const uiPort = await findFreePort();
    const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: '0', TEMPORAL_UI_PORT: String(uiPort), START_WORKER: 'process' };
    delete env.DATABASE_URL;
    delete env.TEMPORAL_ADDRESS;
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/dev.ts'], { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const runtimeFile = path.join(dataDir, 'runtime.json');
    const pids: number[] = [];
    /** A timeout names what we waited for and shows what `npm start` said until then. */
    const waitFor = <T>(probe: () => Promise<T | null | undefined | false>, ms: number, what: string) =>
      until(probe, ms, what, 250).catch((error: Error) => { throw new Error(`${error.message}\n--- output ---\n${output.slice(-4000)}`); });

    try {
      const first = await waitFor(() => readRuntime(runtimeFile), 120_000, 'runtime.json');
      expect(first.pid).toBe(child.pid);
      expect(first.children).toEqual({ postgres: expect.any(Number), temporal: expect.any(Number), worker: expect.any(Number) });
      expect((await runDemo(first)).body.status).toBe('completed');
      let info = first;

      for (const [key, name] of [['postgres', 'PostgreSQL'], ['temporal', 'Temporal'], ['worker', 'worker']] as const) {
        const killed = info.children[key]!;
        pids.push(killed);
        process.kill(killed, 'SIGKILL');
        info = await waitFor(async () => {
          const now = await readRuntime(runtimeFile);
          const back = now?.children[key];
          return back && back !== killed && (await isReady(now.apiUrl)) ? now : null;
        }, 90_000, `${name} to come back after SIGKILL`);
        pids.push(info.children[key]!);
        expect(output).toContain(`[start] ${name} exited (signal SIGKILL); restarting in`);
        expect(output).toContain(`[start] ${name} is back (pid ${info.children[key]})`);
        // Same addresses: nothing that connected before had to be told where to go.
        expect({ apiUrl: info.apiUrl, databaseUrl: info.databaseUrl, temporalAddress: info.temporalAddress })
          .toEqual({ apiUrl: first.apiUrl, databaseUrl: first.databaseUrl, temporalAddress: first.temporalAddress });
        const demo = await runDemo(info);
        expect(demo.status, `${name}: ${JSON.stringify(demo.body)}`).toBe(200);
        expect(demo.body.status).toBe('completed');
        expect(demo.body.sessions!.at(-1)!.output).toEqual({ greeting: 'hello Ada', n: 42 });
        if (key === 'temporal') expect((await fetch(`http://127.0.0.1:${uiPort}/`)).status).toBe(200); // the UI came back on its port
      }

      process.kill(child.pid!, 'SIGTERM');
      expect(await Promise.race([exited, new Promise((r) => setTimeout(() => r('still running'), 30_000))])).toBe(0);
    } finally {
      if (child.exitCode === null) process.kill(-child.pid!, 'SIGKILL');
      await exited;
    }
    expect(output).toContain('[start] stopped');
    // Give the kernel a moment to reap, then nothing we started may remain.
    await waitFor(async () => processesMentioning(dataDir).length === 0, 5_000, 'no process left behind');
    expect(pids.filter(isRunning)).toEqual([]);
    expect(existsSync(runtimeFile)).toBe(false);
  }, 240_000);
});
