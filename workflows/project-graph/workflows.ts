// The project graph's workflows, as the bundle entry (workflows/index.ts) exports them.
export { graphIngestWorkflow } from './graph-ingest.js';
export { graphBuildWorkflow } from './graph-build.js';
