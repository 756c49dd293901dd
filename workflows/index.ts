// The worker's bundle entry: every workflow of the service, by capability.
export { platformProbeWorkflow } from './platform/probe.js';
export { appRunWorkflow } from './app-runs/run-app.js';
export { scheduledRunWorkflow } from './schedules/scheduled-run.js';
export { hardwareOrderWorkflow } from './hardware-sales/order-saga.js';
export { connectorPollWorkflow } from './connectors/poll-binding.js';
export { graphIngestWorkflow, graphBuildWorkflow } from './project-graph/workflows.js';
