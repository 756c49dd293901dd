import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { RuntimeInfo } from '../../scripts/dev/runtime-file.js';

// `npm start` as a test drives it from outside: its own process group (as a terminal runs it), its
// own DATA_DIR, its printed API URL and its runtime.json; and what is left of it after a kill.

export interface NpmStart {
  child: ChildProcess;
  /** Everything it printed so far. */
  output(): string;
  exited: Promise<void>;
  /** Resolves once it printed "is ready": its API URL and how long that took. */
  ready: Promise<{ apiUrl: string; seconds: number }>;
}

/** Spawns `npm start` on `env`, detached (its own process group); `ready` rejects after `timeoutMs` or on an early exit. */
export function spawnNpmStart(env: NodeJS.ProcessEnv, timeoutMs = 120_000): NpmStart {
  const startedAt = performance.now();
  const child = spawn('npm', ['start'], { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ready = new Promise<{ apiUrl: string; seconds: number }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`npm start was not ready within ${timeoutMs / 1000} s:\n${output.slice(-4000)}`)), timeoutMs);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const apiUrl = /API {10}(http:\/\/\S+)/.exec(output)?.[1];
      if (output.includes('is ready') && apiUrl) {
        clearTimeout(timer);
        resolve({ apiUrl, seconds: (performance.now() - startedAt) / 1000 });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then(() => { clearTimeout(timer); reject(new Error(`npm start exited before it was ready:\n${output.slice(-4000)}`)); });
  });
  ready.catch(() => {}); // awaited by the caller; an exit after ready is not an error here
  return { child, output: () => output, exited, ready };
}

/** The environment of an `npm start` on embedded PostgreSQL and Temporal in `dataDir`. */
export function npmStartEnv(dataDir: string, uiPort: number): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: '0', TEMPORAL_UI_PORT: String(uiPort) };
  delete env.DATABASE_URL;
  delete env.TEMPORAL_ADDRESS;
  delete env.START_WORKER;
  return env;
}

export async function readRuntime(dataDir: string): Promise<RuntimeInfo> {
  return JSON.parse(await readFile(path.join(dataDir, 'runtime.json'), 'utf8')) as RuntimeInfo;
}

/** Processes whose command line mentions `needle` (PostgreSQL and Temporal name the data folder). */
export function processesMentioning(needle: string): string[] {
  return execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' }).split('\n').filter((l) => l.includes(needle) && !l.includes('ps -eo'));
}

/** The pids of the process group `pgid` (its members may have any command line). */
export function processGroupMembers(pgid: number): number[] {
  return execFileSync('ps', ['-eo', 'pid=,pgid=,stat='], { encoding: 'utf8' }).split('\n')
    .map((l) => l.trim().split(/\s+/)).filter((f) => f.length === 3 && Number(f[1]) === pgid && !f[2]!.startsWith('Z'))
    .map((f) => Number(f[0]));
}

/** Gone, or a zombie nobody reaped yet: either way it runs no more. */
export function isRunning(pid: number): boolean {
  try {
    const line = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return line.slice(line.lastIndexOf(')') + 2, line.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}
