import { z } from 'zod';
import type { StoredRunEvent } from './run-events-repository.js';

// JSON mode's answer for a run that begins to wait (CONTRACTS.md "Long runs"): 202 instead of the
// result, with where to follow the run. The connection is not held for days.

export const waitingRunView = z.object({
  runId: z.uuid(),
  status: z.literal('waiting'),
  waiting: z.object({ blockId: z.string(), blockType: z.string(), until: z.string().optional(), expiresAt: z.string().optional() }),
  statusUrl: z.string(),
  eventsUrl: z.string(),
}).describe('the run waits on a `wait` or `approval` block (docs/long-runs.md)');
export type WaitingRunAnswer = z.infer<typeof waitingRunView>;

/** The 202 body from the run's `block_waiting` event. */
export function waitingRunAnswer(runId: string, event: StoredRunEvent): WaitingRunAnswer {
  const p = event.payload as { blockId: string; blockType: string; until?: string; expiresAt?: string };
  return {
    runId, status: 'waiting',
    waiting: { blockId: p.blockId, blockType: p.blockType, ...(p.until ? { until: p.until } : {}), ...(p.expiresAt ? { expiresAt: p.expiresAt } : {}) },
    statusUrl: `/runs/${runId}`, eventsUrl: `/api/runs/${runId}/events`,
  };
}
