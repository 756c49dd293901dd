import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';

export const workflowsEntry = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

/** Bundles workflow code once (webpack); production ships the result prebuilt (`npm run build`). The bench bundles its own floor workflows. */
export function bundleWorkflows(workflowsPath = workflowsEntry): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({ workflowsPath, logger: { trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error, log() {} } as never });
}
