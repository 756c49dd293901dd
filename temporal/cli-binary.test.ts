import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { noTemporalMessage, resolveTemporalCli, temporalCliCacheDir } from './cli-binary.js';

describe('finding the Temporal CLI', () => {
  let dir: string;
  const saved = { ...process.env };
  const fakeBinary = async (folder: string) => {
    await mkdir(folder, { recursive: true });
    const file = path.join(folder, 'temporal');
    await writeFile(file, '#!/bin/sh\n');
    await chmod(file, 0o755);
    return file;
  };

  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'cli-binary-'));
    process.env.XDG_CACHE_HOME = path.join(dir, 'cache');
    process.env.PATH = path.join(dir, 'empty-path');
    delete process.env.TEMPORAL_CLI_PATH;
  });
  afterEach(async () => {
    process.env = { ...saved };
    await rm(dir, { recursive: true, force: true });
  });

  it('1. TEMPORAL_CLI_PATH wins over everything', async () => {
    const explicit = await fakeBinary(path.join(dir, 'explicit'));
    await fakeBinary(path.join(dir, 'empty-path'));
    process.env.TEMPORAL_CLI_PATH = explicit;
    expect(await resolveTemporalCli()).toEqual({ kind: 'binary', path: explicit, origin: 'TEMPORAL_CLI_PATH' });
  });

  it('refuses a TEMPORAL_CLI_PATH that is not executable', async () => {
    process.env.TEMPORAL_CLI_PATH = path.join(dir, 'missing');
    await expect(resolveTemporalCli()).rejects.toThrow(/TEMPORAL_CLI_PATH=.*not an executable/);
  });

  it('2. then `temporal` on PATH', async () => {
    const onPath = await fakeBinary(path.join(dir, 'empty-path'));
    expect(await resolveTemporalCli()).toEqual({ kind: 'binary', path: onPath, origin: 'PATH' });
  });

  it('3. then the cached go-install build, outside the repository', async () => {
    expect(temporalCliCacheDir().startsWith(path.join(dir, 'cache'))).toBe(true);
    const cached = await fakeBinary(temporalCliCacheDir());
    expect(await resolveTemporalCli()).toEqual({ kind: 'binary', path: cached, origin: 'go-install-cache' });
  });

  it('4. else the SDK download; the failure message lists the three ways to provide Temporal', async () => {
    expect(await resolveTemporalCli()).toEqual({ kind: 'sdk-download' });
    expect(noTemporalMessage).toMatch(/TEMPORAL_ADDRESS/);
    expect(noTemporalMessage).toMatch(/TEMPORAL_CLI_PATH.*`temporal` on PATH/);
    expect(noTemporalMessage).toMatch(/go install github\.com\/temporalio\/cli\/cmd\/temporal@v1\.5\.1/);
  });
});
