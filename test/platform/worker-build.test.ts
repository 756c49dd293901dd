import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, rm, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { buildWorkerModule, builtWorkerEntry } from '../../scripts/dev/worker-build.js';
import { projectRoot } from '../../shared/config.js';

// The worker process of `START_WORKER=process` and `npm run topology` runs worker/main.ts compiled
// at start (scripts/dev/worker-build.ts). That it polls, runs the demo and comes back after SIGKILL
// is test/platform/self-healing.test.ts; here, what the build itself promises.
describe('the worker module built at start', () => {
  it('is named by its content, keeps each file\'s own location, and starts as worker/main.ts does', async () => {
    const first = await buildWorkerModule();
    expect(await buildWorkerModule()).toBe(first);
    expect(path.dirname(first)).toBe(path.join(projectRoot, 'node_modules', '.cache', 'workflow-app-service'));
    // Paths the worker derives from its own files (the workflows' entry, the project root) stay theirs.
    const code = await readFile(first, 'utf8');
    expect(code).toContain(JSON.stringify(pathToFileURL(path.join(projectRoot, 'worker', 'bundle.ts')).href));
    expect(code).not.toContain('import.meta.url');

    // Without its targets the production entry refuses to start: the same words and exit code as under tsx.
    const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'silent' };
    delete env.DATABASE_URL;
    delete env.TEMPORAL_ADDRESS;
    const built = spawnSync(process.execPath, await builtWorkerEntry(), { env, encoding: 'utf8', timeout: 30_000 });
    const underTsx = spawnSync(process.execPath, ['--import', 'tsx', 'worker/main.ts'], { cwd: projectRoot, env, encoding: 'utf8', timeout: 30_000 });
    expect(built.stderr).toContain('DATABASE_URL and TEMPORAL_ADDRESS must be set');
    expect({ status: built.status, stderr: built.stderr }).toEqual({ status: underTsx.status, stderr: underTsx.stderr });
    expect(built.status).toBe(2);
  }, 60_000);

  it('removes builds not started from for ten minutes, and keeps newer ones', async () => {
    const current = await buildWorkerModule();
    const dir = path.dirname(current);
    const stale = path.join(dir, 'worker-00000000000000aa.mjs');
    const recent = path.join(dir, 'worker-00000000000000bb.mjs');
    await writeFile(stale, '');
    await writeFile(recent, '');
    const elevenMinutesAgo = new Date(Date.now() - 11 * 60_000);
    await utimes(stale, elevenMinutesAgo, elevenMinutesAgo);
    try {
      expect(await buildWorkerModule()).toBe(current);
      expect(existsSync(stale)).toBe(false);
      expect(existsSync(recent)).toBe(true);
      expect(existsSync(current)).toBe(true);
    } finally {
      await rm(recent, { force: true });
    }
  });
});
