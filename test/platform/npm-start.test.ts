import { execFileSync, spawn } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findFreePort } from '../../shared/ports.js';

/** Processes whose command line mentions `needle` (our data folder names every server we start). */
function processesMentioning(needle: string): string[] {
  const out = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  return out.split('\n').filter((line) => line.includes(needle) && !line.includes('ps -eo'));
}

// The newcomer's path: `npm start` on embedded defaults reaches ready, prints the URLs, and a
// Ctrl-C (SIGINT to the whole process group, as a terminal sends it) leaves no process behind.
describe('npm start', () => {
  let dataDir = '';
  afterAll(async () => { if (dataDir) await rm(dataDir, { recursive: true, force: true }); });

  it('starts the whole stack, answers /readyz and the Temporal UI, and stops cleanly on Ctrl-C', async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'wfapp-start-'));
    await chmod(dataDir, 0o755); // as under a checkout: PostgreSQL (run as `postgres` under root) must enter it
    const uiPort = await findFreePort();
    const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: "0", TEMPORAL_UI_PORT: String(uiPort) };
    delete env.DATABASE_URL;
    delete env.TEMPORAL_ADDRESS;
    delete env.LOG_LEVEL; // npm start's own default: warn
    const child = spawn('npm', ['start'], { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

    try {
      const deadline = Date.now() + 90_000;
      while (!output.includes('is ready') && Date.now() < deadline && child.exitCode === null) await new Promise((r) => setTimeout(r, 100));
      expect(output, output).toContain('is ready');
      const apiUrl = /API {10}(http:\/\/\S+)/.exec(output)?.[1];
      expect(apiUrl).toBeDefined();
      expect(output).toContain(`API docs     ${apiUrl}/docs`);
      expect(output).toContain(`Temporal UI  http://127.0.0.1:${uiPort}`);
      expect(output).toMatch(/Demo API key wfk-[A-Za-z0-9_-]{49}/);

      const ready = await fetch(`${apiUrl}/readyz`);
      expect(ready.status).toBe(200);
      expect((await fetch(`${apiUrl}/docs/json`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${uiPort}/`)).status).toBe(200);
      expect(processesMentioning(dataDir).length).toBeGreaterThanOrEqual(2); // PostgreSQL and Temporal

      // The printed demo app runs, with the printed key, through the in-process worker.
      const demoKey = /Demo API key (wfk-\S+)/.exec(output)![1]!;
      const runUrl = /curl -s -X POST (\S+\/run) /.exec(output)?.[1];
      expect(runUrl).toBeDefined();
      const demo = await fetch(runUrl!, {
        method: 'POST', headers: { authorization: `Bearer ${demoKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ inputs: { name: 'Ada', n: 21 }, stream: false }),
      });
      expect(demo.status).toBe(200);
      const result = await demo.json() as { status: string; sessions: Array<{ output: unknown }> };
      expect(result.status).toBe('completed');
      expect(result.sessions.at(-1)!.output).toEqual({ greeting: 'hello Ada', n: 42 });

      // A second start on the same data folder (even with a database of its own) refuses before it
      // starts anything, naming the first start's pid and how to pick another DATA_DIR.
      const firstPid = (JSON.parse(await readFile(path.join(dataDir, 'runtime.json'), 'utf8')) as { pid: number }).pid;
      const second = spawn('npm', ['start'], { env: { ...env, DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' }, stdio: ['ignore', 'pipe', 'pipe'] });
      let secondOutput = '';
      second.stdout.on('data', (chunk: Buffer) => { secondOutput += chunk.toString(); });
      second.stderr.on('data', (chunk: Buffer) => { secondOutput += chunk.toString(); });
      const secondCode = await new Promise<number | null>((resolve) => second.once('exit', (code) => resolve(code)));
      expect(secondCode, secondOutput).not.toBe(0);
      expect(secondOutput).toContain(`refusing to start: another npm start (pid ${firstPid}`);
      expect(secondOutput).toContain('DATA_DIR=');
      expect(secondOutput).not.toContain('starting Temporal dev server');
      // The first is unharmed.
      expect((await fetch(`${apiUrl}/readyz`)).status).toBe(200);
    } finally {
      if (child.exitCode === null) process.kill(-child.pid!, 'SIGINT');
      await exited;
    }
    expect(output).toContain('[start] stopped');
    // At LOG_LEVEL warn nothing below warn is printed, the Temporal SDK's own lines included (issue 45).
    const infoLines = output.split('\n').filter((line) => /"level":\s*(10|20|30)\b|\bINFO\b|Worker state changed|No Nexus services registered/.test(line));
    expect(infoLines).toEqual([]);
    // The lock is released with the rest: the next start on this folder may begin.
    await expect(readFile(path.join(dataDir, 'start.lock'), 'utf8')).rejects.toThrow(/ENOENT/);
    // Give the kernel a moment to reap, then nothing we started may remain.
    await new Promise((r) => setTimeout(r, 500));
    expect(processesMentioning(dataDir)).toEqual([]);
  }, 120_000);
});
