import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { AppDeps } from '../../api/deps.js';
import { taskQueueName } from '../../temporal/task-queues.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import { WORKER_NODE_FLAGS } from '../../worker/node-flags.js';
import { builtWorkerEntry } from '../dev/worker-build.js';

/**
 * The worker as `npm start` runs it in a process of its own (START_WORKER=process: worker/main.ts
 * compiled at start, scripts/dev/worker-build.ts), stopped with SIGTERM like a deployment would.
 * BENCH_WORKER_NODE_FLAGS adds Node flags, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile it.
 */
export async function startWorkerProcess(env: Record<string, string>, options: { compiled?: boolean } = {}): Promise<{ pid: number | null; exited: Promise<never>; stop(): Promise<void> }> {
  // `compiled`: the build's JavaScript, as the Docker image runs it (`npm run build` first).
  const entry = options.compiled ? ['dist/worker/main.js'] : await builtWorkerEntry();
  const child = spawn(process.execPath, [...WORKER_NODE_FLAGS, ...(process.env.BENCH_WORKER_NODE_FLAGS?.split(' ').filter(Boolean) ?? []), ...entry], {
    env: { ...process.env, ...env, LOG_LEVEL: 'silent' }, stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const exitedEarly = exited.then((): never => { throw new Error('the worker process exited'); });
  exitedEarly.catch(() => undefined); // a stop() exit is expected: only a race on it reports it
  return {
    pid: child.pid ?? null,
    /** Rejects if the worker exits: raced with the wait for it, the bench fails at once instead of timing out. */
    exited: exitedEarly,
    async stop() {
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      child.kill('SIGKILL');
    },
  };
}

/** Resolves once the worker answers: a probe workflow (one activity) completes. */
export async function waitForWorker(deps: AppDeps, timeoutMs = 120_000): Promise<void> {
  await deps.temporal.client.workflow.execute('platformProbeWorkflow', {
    taskQueue: taskQueueName('platform', deps.config.TEMPORAL_TASK_QUEUE_SUFFIX), workflowId: workflowIds.platformProbe(randomUUID()),
    args: [{ probeId: randomUUID(), note: 'bench: worker ready' }], workflowExecutionTimeout: timeoutMs,
  });
}
