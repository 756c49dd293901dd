import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { withParentDeathSignal } from '../../shared/parent-death-signal.js';
import { awaitChildReady, type SupervisedChild } from '../../shared/supervisor.js';
import { WORKER_NODE_FLAGS } from '../../worker/node-flags.js';
import { builtWorkerEntry } from './worker-build.js';

const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 15_000;

/**
 * `START_WORKER=process`: the worker as its own process (`worker/main.ts`, the production entry,
 * compiled at each start: worker-build.ts), so a chaos test can SIGKILL it. Resolves once it polls
 * (it says so over the IPC channel); its output goes to ours line by line, prefixed `[worker]` (or
 * the name given). Like the Temporal server it has its own process group, so a terminal's Ctrl-C
 * reaches only us and we stop it after the API has drained, and a parent-death signal, so it does
 * not outlive a crashed `npm start`.
 */
export async function startWorkerProcess(env: NodeJS.ProcessEnv, log: (line: string) => void, name = 'worker'): Promise<SupervisedChild> {
  const [command, args] = withParentDeathSignal(process.execPath, [...WORKER_NODE_FLAGS, ...await builtWorkerEntry()]);
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'], detached: true });
  for (const stream of [child.stdout, child.stderr]) createInterface({ input: stream! }).on('line', (line) => log(`[${name}] ${line}`));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM'); // worker/main.ts drains its workers, then exits
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  };

  await awaitChildReady({
    ready: new Promise<void>((resolve) => child.on('message', (message) => { if ((message as { ready?: boolean })?.ready) resolve(); })),
    exited, stop, timeoutMs: READY_TIMEOUT_MS,
    exitedMessage: ({ code, signal }) => `the worker process exited before polling (${signal ? `signal ${signal}` : `code ${code}`})`,
    timeoutMessage: `the worker process did not poll within ${READY_TIMEOUT_MS / 1000} s`,
  });
  return { pid: child.pid ?? null, exited, stop };
}
