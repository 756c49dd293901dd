// Production entry of the worker: `npm run worker` (needs DATABASE_URL and TEMPORAL_ADDRESS).
// With WORKFLOW_BUNDLE_PATH (made by `npm run build`) it starts without bundling. Workers that fail
// (Temporal gone for a while) are created again in this process, with backoff, instead of the
// process exiting and waiting for its container to be restarted (worker/supervise-workers.ts).
import { NativeConnection } from '@temporalio/worker';
import { loadProductionConfigOrExit } from '../shared/config.js';
import { bundleWorkflows } from './bundle.js';
import { installWorkerRuntime } from './runtime.js';
import { startWorkers } from './start.js';
import { superviseWorkers } from './supervise-workers.js';

const STOP_TIMEOUT_MS = 30_000;
const { config, targets } = loadProductionConfigOrExit();
// We stop the workers ourselves on a signal: stopped by the SDK's own handler, they would end
// without us asking, and be taken for crashed and restarted. The SDK's logs follow LOG_LEVEL.
installWorkerRuntime(config.LOG_LEVEL);
const log = (message: string) => console.warn(message);
const workflowBundle = config.WORKFLOW_BUNDLE_PATH ? { codePath: config.WORKFLOW_BUNDLE_PATH } : await bundleWorkflows();
// One connection for every generation of workers: it reconnects by itself once Temporal is back.
const connection = await NativeConnection.connect({ address: targets.temporalAddress });
const supervisor = await superviseWorkers({
  connection, log, start: () => startWorkers({ config, ...targets, workflowBundle, connection, log }),
});
// Under `npm start` with START_WORKER=process, the parent counts us as up once we say so.
process.send?.({ ready: true }, undefined, undefined, () => {});

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  // Ref'd on purpose: SDK shutdown steps settle from native threads that hold no Node handle, and
  // the process would otherwise exit before the workers have drained.
  setTimeout(() => { log(`workers did not stop within ${STOP_TIMEOUT_MS / 1000} s; exiting`); process.exit(1); }, STOP_TIMEOUT_MS);
  // Worker.shutdown lets activities in flight finish before the process exits.
  await supervisor.stop();
  await connection.close();
  process.exit(0);
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => void stop());
// The IPC channel of `npm start` closes when it dies: do not outlive it (where no parent-death signal exists).
process.on('disconnect', () => void stop());
