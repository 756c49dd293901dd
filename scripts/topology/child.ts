import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { withParentDeathSignal } from '../../shared/parent-death-signal.js';
import { awaitChildReady, type SupervisedChild } from '../../shared/supervisor.js';

export interface ChildSpec {
  /** Names the child in its log lines and errors: `api-1`, `temporal`, … */
  name: string;
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Every line the child prints goes here, prefixed `[name]`. */
  logFile: string;
  /** Resolves once the child serves (a port answers, /readyz is 200 …); rejected or late means it failed to start. */
  ready(): Promise<void>;
  readyTimeoutMs?: number;
  /** How it is asked to stop (SIGTERM: drain; nginx takes SIGQUIT); SIGKILL after `stopTimeoutMs`. */
  stopSignal?: NodeJS.Signals;
  stopTimeoutMs?: number;
}

/**
 * One process of the topology: its own process group (a terminal's Ctrl-C reaches only the
 * topology, which stops its children in order), a parent-death signal (it does not outlive a
 * crashed topology), its output in a log file. The supervisor (shared/supervisor.ts) restarts it.
 */
export async function startChild(spec: ChildSpec): Promise<SupervisedChild> {
  const [command, args] = withParentDeathSignal(spec.command, spec.args);
  const child = spawn(command, args, { env: spec.env ?? process.env, cwd: spec.cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const log = createWriteStream(spec.logFile, { flags: 'a' });
  let tail = '';
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream! }).on('line', (line) => {
      tail = `${tail}${line}\n`.slice(-2_000);
      log.write(`[${spec.name}] ${line}\n`);
    });
  }
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', () => resolve({ code: null, signal: null }));
  });
  exited.then(() => setTimeout(() => log.end(), 100), () => {});
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill(spec.stopSignal ?? 'SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), spec.stopTimeoutMs ?? 15_000);
    await exited;
    clearTimeout(timer);
  };

  const readyTimeoutMs = spec.readyTimeoutMs ?? 60_000;
  await awaitChildReady({
    ready: spec.ready(), exited, stop, timeoutMs: readyTimeoutMs,
    exitedMessage: ({ code, signal }) => `${spec.name} exited while starting (${signal ?? `code ${code}`}): ${tail.trim().split('\n').slice(-3).join(' | ')}`,
    timeoutMessage: `${spec.name} did not start within ${readyTimeoutMs / 1000} s (log: ${spec.logFile})`,
  });
  return { pid: child.pid ?? null, exited, stop };
}

/** Polls `url` until it answers 200 (an API's /readyz), for a child's `ready`. */
export async function untilHttpOk(url: string, stillWanted: () => boolean = () => true): Promise<void> {
  while (stillWanted()) {
    const ok = await fetch(url, { signal: AbortSignal.timeout(2_000) }).then(async (res) => { await res.arrayBuffer(); return res.ok; }, () => false);
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
