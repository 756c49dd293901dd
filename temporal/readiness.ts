import { randomUUID } from 'node:crypto';
import { msToTs } from '@temporalio/common/lib/time.js';
import type { TemporalHealthConnection } from './connection.js';
import { workflowIds } from './workflow-ids.js';

// Ready means able to work: a Temporal server can answer reads (GetSystemInfo) while every write
// fails (its store locked by a second server on the same SQLite file: SQLITE_BUSY, shard status
// unknown). So readiness writes: it signals a probe execution, starting it when absent. No worker
// polls its queue; each hour has its own execution (about 360 signals at a 10 s poll), which the
// server closes itself after the hour, so history stays small and the UI shows one row an hour.

/** The hour's probe execution (`platform-readiness-2026112713`). */
export const readinessWorkflowId = (now = new Date()) =>
  workflowIds.platformReadiness(now.toISOString().slice(0, 13).replace(/[-T]/g, ''));

export const READINESS_TASK_QUEUE = 'platform-readiness';
export const READINESS_WORKFLOW_TYPE = 'platformReadiness';

export type TemporalProbeConnection = Pick<TemporalHealthConnection, 'workflowService' | 'withDeadline'>;

/** Resolves once Temporal has persisted a signal (a write through its store) within `timeoutMs`. */
export async function probeTemporalWrites(connection: TemporalProbeConnection, namespace: string, timeoutMs = 2_000): Promise<void> {
  await connection.withDeadline(Date.now() + timeoutMs, () =>
    connection.workflowService.signalWithStartWorkflowExecution({
      namespace,
      workflowId: readinessWorkflowId(),
      workflowType: { name: READINESS_WORKFLOW_TYPE },
      taskQueue: { name: READINESS_TASK_QUEUE },
      // Past its hour plus a margin: the server ends it, nobody has to.
      workflowExecutionTimeout: msToTs('65 minutes'),
      signalName: 'probe',
      identity: 'readiness',
      requestId: randomUUID(),
    }),
  );
}
