// The stack under test is the real `npm start` (scripts/dev.ts, with the worker in its own supervised
// process: START_WORKER=process) or the real `npm run topology` (scripts/topology.ts), as a child
// process, so what is killed and brought back is exactly what people run. We only read its
// runtime.json and talk HTTP to it.
import { spawn } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { withParentDeathSignal } from '../../shared/parent-death-signal.js';
import { findFreePort } from '../../shared/ports.js';
import type { ChaosLayout } from './layout.js';
import { ChaosTimeout, sleep, until, within } from './timing.js';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
/** First start bundles the workflows and runs initdb: ~20 s alone, much more while tests share the 2 cores. */
const START_TIMEOUT_MS = 300_000;
const STOP_TIMEOUT_MS = 60_000;

/** What both layouts write to runtime.json and the chaos run reads. */
export interface StackInfo {
  apiUrl: string;
  databaseUrl: string;
  temporalAddress: string;
  demo: { apiKey: string; teamId: string; projectId: string; deploymentId: string };
  /** Supervised children by name; null while one is down. */
  children: Record<string, number | null>;
}

export interface ChaosStack {
  dataDir: string;
  /** Everything the stack printed (its own lines, the worker's, the API's pino lines). */
  logFile: string;
  /** runtime.json as the stack wrote it at start (API, database, Temporal, demo tenant). */
  info: StackInfo;
  /** runtime.json now: the pids change whenever the supervisor restarts a child. */
  runtime(): Promise<StackInfo>;
  /** Whether the stack process is still alive (it should never exit during the run). */
  readonly exited: { code: number | null; signal: NodeJS.Signals | null } | null;
  /** SIGTERM and wait for the ordered shutdown; SIGKILL after a minute (its children get a parent-death signal). */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null; clean: boolean }>;
}

/** GET /readyz: 200 when the API reaches both PostgreSQL and Temporal. */
export async function isReady(apiUrl: string): Promise<boolean> {
  try {
    const res = await fetch(`${apiUrl}/readyz`, { signal: AbortSignal.timeout(5_000) });
    await res.arrayBuffer();
    return res.status === 200;
  } catch {
    return false;
  }
}

export async function readRuntime(dataDir: string): Promise<StackInfo> {
  return JSON.parse(await readFile(path.join(dataDir, 'runtime.json'), 'utf8')) as StackInfo;
}

/** `env`: more settings for every process of the stack (the payment channels' keys of the order drivers). */
export async function startStack(options: { layout: ChaosLayout; dataDir: string; llmBaseUrl: string; env?: Record<string, string>; log: (line: string) => void }): Promise<ChaosStack> {
  const { dataDir } = options;
  const logFile = path.join(dataDir, 'stack.log');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATA_DIR: dataDir,
    PORT: '0',
    TEMPORAL_UI_PORT: String(await findFreePort()),
    START_WORKER: 'process',
    LLM_BASE_URL: options.llmBaseUrl,
    LLM_API_KEY: 'x',
    LOG_LEVEL: 'warn',
    // Open runs that no workflow will end are looked at after 20 s, every 2 s, and recorded
    // starts are dispatched every 250 ms: the run heals within the counting window.
    RUN_RECONCILE_INTERVAL_SECONDS: '2',
    RUN_RECONCILE_MIN_AGE_SECONDS: '20',
    WORKFLOW_DISPATCH_INTERVAL_MS: '250',
    ...options.env,
  };
  // Settings of a developer's shell must not point the stack elsewhere than its own embedded servers.
  for (const name of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'TEMPORAL_TASK_QUEUE_SUFFIX', 'REDIS_URL', 'WORKFLOW_BUNDLE_PATH', 'NODE_OPTIONS']) delete env[name];

  const out = openSync(logFile, 'a');
  // A parent-death signal: if the chaos run itself dies (a test timeout), the stack stops too.
  const [command, args] = withParentDeathSignal(process.execPath, ['--import', 'tsx', options.layout.entry]);
  const child = spawn(command, args, { cwd: repoRoot, env, stdio: ['ignore', out, out] });
  closeSync(out);
  let exited: ChaosStack['exited'] = null;
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => { exited = { code, signal }; resolve({ code, signal }); });
  });

  const stop = async () => {
    if (exited) return { ...exited, clean: false };
    child.kill('SIGTERM');
    const outcome = await within(exit, STOP_TIMEOUT_MS, 'stack stop').catch(async () => {
      options.log('the stack did not stop in time; SIGKILL');
      child.kill('SIGKILL');
      return { ...(await exit), late: true };
    });
    return { code: outcome.code, signal: outcome.signal, clean: outcome.code === 0 && !('late' in outcome) };
  };

  try {
    const started = performance.now();
    const info = await within(Promise.race([
      until(async () => {
        const runtime = await readRuntime(dataDir);
        const whole = Object.values(options.layout.targets).flat().every((name) => runtime.children[name]);
        return whole && await isReady(runtime.apiUrl) ? runtime : undefined;
      }, START_TIMEOUT_MS, 'stack start', 500),
      exit.then(({ code, signal }) => Promise.reject(new Error(`the stack exited while starting (${signal ?? `code ${code}`}); see ${logFile}`))),
    ]), START_TIMEOUT_MS + 5_000, 'stack start');
    options.log(`stack ready in ${((performance.now() - started) / 1000).toFixed(1)} s: ${info.apiUrl} (pids ${JSON.stringify(info.children)})`);
    return { dataDir, logFile, info, runtime: () => readRuntime(dataDir), get exited() { return exited; }, stop };
  } catch (error) {
    await stop();
    await sleep(100);
    throw error instanceof ChaosTimeout ? new Error(`${error.message}; see ${logFile}`) : error;
  }
}
