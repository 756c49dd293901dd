// Production entry of the worker: `npm run worker` (needs DATABASE_URL and TEMPORAL_ADDRESS).
// With WORKFLOW_BUNDLE_PATH (made by `npm run build`) it starts without bundling.
import { loadProductionConfigOrExit } from '../shared/config.js';
import { bundleWorkflows } from './bundle.js';
import { startWorkers } from './start.js';

const { config, targets } = loadProductionConfigOrExit();
const workflowBundle = config.WORKFLOW_BUNDLE_PATH ? { codePath: config.WORKFLOW_BUNDLE_PATH } : await bundleWorkflows();
const running = await startWorkers({ config, ...targets, workflowBundle, log: (m) => console.warn(m) });

// Worker.shutdown lets activities in flight finish before the process exits; the SDK's runtime
// already handles SIGINT/SIGTERM by shutting every worker down.
await running.done;
