// Workflow ids are business keys, so an operator finds any execution in the Temporal UI by the id
// they already have (run id, order id …), and a duplicate start is refused by Temporal itself.

export const workflowIds = {
  platformProbe: (probeId: string) => `platform-probe-${probeId}`,
  appRun: (runId: string) => `app-run-${runId}`,
} as const;
