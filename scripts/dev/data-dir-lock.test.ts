import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DataDirLockedError, lockDataDir } from './data-dir-lock.js';

describe('the data folder lock of npm start', () => {
  let dir = '';
  beforeEach(async () => { dir = await mkdtemp(path.join(os.tmpdir(), 'wfapp-lock-')); });
  afterEach(async () => { await rm(dir, { recursive: true, force: true }); });
  const lockFile = () => path.join(dir, 'start.lock');

  it('is taken once: a second taker is refused with the holder pid and how to pick another DATA_DIR', async () => {
    const lock = await lockDataDir(dir);
    expect(JSON.parse(await readFile(lockFile(), 'utf8')).pid).toBe(process.pid);
    const second = await lockDataDir(dir).catch((error: unknown) => error);
    expect(second).toBeInstanceOf(DataDirLockedError);
    expect((second as Error).message).toContain(`pid ${process.pid}`);
    expect((second as Error).message).toContain(dir);
    expect((second as Error).message).toContain('DATA_DIR=');
    await lock.release();
    // Released: the next start takes it.
    await (await lockDataDir(dir)).release();
  });

  it('is refused while another live process holds it', async () => {
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)']);
    try {
      await writeFile(lockFile(), JSON.stringify({ pid: other.pid, startedAt: 'then', processStart: null }));
      await expect(lockDataDir(dir)).rejects.toThrow(`pid ${other.pid}`);
      expect(JSON.parse(await readFile(lockFile(), 'utf8')).pid).toBe(other.pid);
    } finally {
      other.kill('SIGKILL');
    }
  });

  it('takes over a lock whose process is gone (SIGKILL, power loss)', async () => {
    const gone = spawn(process.execPath, ['-e', '']);
    await new Promise((resolve) => gone.once('exit', resolve));
    await writeFile(lockFile(), JSON.stringify({ pid: gone.pid, startedAt: 'then', processStart: null }));
    const lock = await lockDataDir(dir);
    expect(JSON.parse(await readFile(lockFile(), 'utf8')).pid).toBe(process.pid);
    await lock.release();
  });

  it('takes over a lock whose pid now belongs to another process (a different start time)', async () => {
    await writeFile(lockFile(), JSON.stringify({ pid: process.pid, startedAt: 'then', processStart: '1' }));
    const lock = await lockDataDir(dir);
    expect(JSON.parse(await readFile(lockFile(), 'utf8')).processStart).not.toBe('1');
    await lock.release();
  });

  it('release leaves a lock that is not its own', async () => {
    const lock = await lockDataDir(dir);
    await writeFile(lockFile(), JSON.stringify({ pid: process.pid + 1_000_000, startedAt: 'then', processStart: null }));
    await lock.release();
    expect(JSON.parse(await readFile(lockFile(), 'utf8')).pid).toBe(process.pid + 1_000_000);
  });
});
