import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { until } from '../harness/until.js';

/** Gone, or a zombie waiting for whoever adopted it to reap it: either way it runs no more. */
const isRunning = (pid: number) => {
  const stat = `/proc/${pid}/stat`;
  if (!existsSync(stat)) return false;
  try {
    const line = readFileSync(stat, 'utf8');
    return line.slice(line.lastIndexOf(')') + 2, line.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
};

describe.runIf(process.platform === 'linux')('the Temporal dev server we start', () => {
  it('stops when the process that started it is killed with SIGKILL (no handler can run)', async () => {
    // The starter writes to a file: the test reads the server's pid there, holding no pipe to it.
    const dir = await mkdtemp(path.join(os.tmpdir(), 'wfapp-orphan-'));
    const outFile = path.join(dir, 'out');
    const out = openSync(outFile, 'w');
    const starter = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', `
      const { startTemporalDevServer } = await import('./temporal/dev-server.ts');
      const server = await startTemporalDevServer({ namespace: 'default' });
      console.log('pid ' + server.pid);
      setInterval(() => {}, 1000);
    `], { stdio: ['ignore', out, out] });
    closeSync(out);
    const pid = Number((await until(async () => /pid (\d+)/.exec(await readFile(outFile, 'utf8')), 60_000, 'the dev server to start'))[1]);
    expect(isRunning(pid)).toBe(true);
    // Past its start-up logging: a server that writes to the dead starter's pipe dies of SIGPIPE
    // anyway; one that is quiet, as it is after start-up, outlived its starter before PDEATHSIG.
    await new Promise((r) => setTimeout(r, 5_000));
    starter.kill('SIGKILL');
    await until(async () => !isRunning(pid), 15_000, `the orphaned server ${pid} to stop`);
    expect(isRunning(pid)).toBe(false);
    await rm(dir, { recursive: true, force: true });
  }, 90_000);
});
