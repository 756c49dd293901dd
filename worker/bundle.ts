import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';

export const workflowsEntry = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

/**
 * Evaluated once per reusable V8 context instead of once per workflow run (the SDK evaluates
 * workflow modules again for every run unless they are preloaded), before the SDK freezes the
 * sandbox's globals: JSONata, the stack-trace limit (set once for the sandbox), the SDK's workflow
 * API and the workflows entry itself, so every module it imports. Only modules without per-workflow
 * state belong here: the SDK's workflow API finds the current workflow at each call, JSONata keeps
 * nothing between evaluations, and test/platform/preloaded-workflow-modules.test.ts holds our
 * modules to no state at module level. Evaluating them per run was a fifth of the app-runs
 * workflow thread's time.
 */
const preloadModules = (workflowsPath: string) => [
  'jsonata', fileURLToPath(new URL('../workflows/stack-trace-limit.ts', import.meta.url)), '@temporalio/workflow', workflowsPath,
];

/** Bundles workflow code once (webpack); production ships the result prebuilt (`npm run build`). The bench bundles its own floor workflows. */
export function bundleWorkflows(workflowsPath = workflowsEntry): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({ workflowsPath, preloadModules: preloadModules(workflowsPath), logger: { trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error, log() {} } as never });
}
