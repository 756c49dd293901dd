import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';

export const workflowsEntry = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

/**
 * Evaluated once per reusable V8 context instead of once per workflow run (the SDK re-evaluates
 * workflow modules for every run), before the SDK freezes the sandbox's globals. Only modules
 * without per-workflow state belong here: JSONata keeps none between evaluations; the stack-trace
 * limit is set once for the sandbox.
 */
const preloadModules = ['jsonata', fileURLToPath(new URL('../workflows/stack-trace-limit.ts', import.meta.url))];

/** Bundles workflow code once (webpack); production ships the result prebuilt (`npm run build`). The bench bundles its own floor workflows. */
export function bundleWorkflows(workflowsPath = workflowsEntry): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({ workflowsPath, preloadModules, logger: { trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error, log() {} } as never });
}
