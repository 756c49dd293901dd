import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';
import { projectRoot } from '../../shared/config.js';

// The worker process that `npm start` (START_WORKER=process), `npm run topology` and the benches
// start runs our TypeScript compiled into one module at start, not through tsx: on Node 20 tsx
// transforms in a loader thread of its own (in-thread hooks came with Node 22.15) and keeps every
// file's source map, ~45 MB of a process whose memory is a target (issue 44: under 300 MB with
// 10,000 runs waiting). esbuild is what tsx compiles with, so the code is the same; packages stay
// outside the module and load from node_modules as before.

/** Where the modules go: inside the project, so Node resolves their packages from its node_modules. */
const buildDir = path.join(projectRoot, 'node_modules', '.cache', 'workflow-app-service');
const entry = path.join(projectRoot, 'worker', 'main.ts');

/** Each source file keeps its own `import.meta.url` (paths to the workflows, the project root). */
const ownImportMetaUrl: Plugin = {
  name: 'own-import-meta-url',
  setup(esbuild) {
    // Only the project's files reach it: packages are left outside the module.
    esbuild.onLoad({ filter: /\.ts$/ }, async ({ path: file }) => {
      const source = await readFile(file, 'utf8');
      return { contents: source.replaceAll('import.meta.url', JSON.stringify(pathToFileURL(file).href)), loader: 'ts' };
    });
  },
};

/** A build no process has started from for this long is removed (a process reads its module once, at start). */
const KEEP_OLD_BUILDS_MS = 10 * 60_000;

/**
 * Compiles worker/main.ts and what it imports from the project (0.2 s here) and returns the
 * module's path, named by its content so that stacks starting at once share one file. Called at
 * every start of a worker process, so that, as under tsx, a restarted worker runs the code on disk.
 */
export async function buildWorkerModule(): Promise<string> {
  const { outputFiles } = await build({
    entryPoints: [entry], bundle: true, packages: 'external', platform: 'node', format: 'esm', target: 'node20',
    sourcemap: 'inline', write: false, logLevel: 'silent', plugins: [ownImportMetaUrl],
    outfile: path.join(buildDir, 'worker.mjs'),
  });
  const code = outputFiles[0]!.contents;
  const name = `worker-${createHash('sha256').update(code).digest('hex').slice(0, 16)}.mjs`;
  const file = path.join(buildDir, name);
  await mkdir(buildDir, { recursive: true });
  const partial = `${file}.${process.pid}.partial`;
  await writeFile(partial, code);
  await rename(partial, file); // whole or not at all, for a stack reading it at the same moment
  for (const old of await readdir(buildDir)) {
    if (!/^worker-[0-9a-f]{16}\.mjs$/.test(old) || old === name) continue;
    const { mtimeMs } = await stat(path.join(buildDir, old)).catch(() => ({ mtimeMs: Date.now() }));
    if (Date.now() - mtimeMs > KEEP_OLD_BUILDS_MS) await rm(path.join(buildDir, old), { force: true });
  }
  return file;
}

/**
 * What follows WORKER_NODE_FLAGS on a worker process's command line: the module built now, with
 * stack traces naming the TypeScript files (its inline source map).
 */
export async function builtWorkerEntry(): Promise<string[]> {
  return ['--enable-source-maps', await buildWorkerModule()];
}
