// Workflow ids are business keys, so an operator finds any execution in the Temporal UI by the id
// they already have (run id, order id …), and a duplicate start is refused by Temporal itself.

export const workflowIds = {
  platformProbe: (probeId: string) => `platform-probe-${probeId}`,
  /** Readiness's write probe (temporal/readiness.ts): one execution an hour, signalled by every probe. */
  platformReadiness: (hour: string) => `platform-readiness-${hour}`,
  appRun: (runId: string) => `app-run-${runId}`,
  /** The Temporal Schedule of a schedule row. */
  schedule: (scheduleId: string) => `schedule-${scheduleId}`,
  /** Runs a Temporal Schedule starts; Temporal appends the fire time to this prefix. */
  scheduledRun: (scheduleId: string) => `scheduled-run-${scheduleId}`,
  /** `POST /schedules/:id/trigger`. */
  manualScheduledRun: (scheduleId: string, requestId: string) => `scheduled-run-${scheduleId}-manual-${requestId}`,
  /** The saga of a hardware order, by its order number (what the buyer and the operator hold). */
  hardwareOrder: (orderNo: string) => `hardware-order-${orderNo}`,
  /** The polling of one connector binding, for as long as the binding lives. */
  connectorPoll: (bindingId: string) => `connector-poll-${bindingId}`,
  /** Ingestion of one hand-submitted graph episode (`POST …/graph/episodes`), by its job id. */
  graphIngest: (jobId: string) => `graph-ingest-${jobId}`,
  /** A memory generation build of a project; a Temporal Schedule appends its fire time. */
  graphBuild: (buildId: string) => `graph-build-${buildId}`,
} as const;
