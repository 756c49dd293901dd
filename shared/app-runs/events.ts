// Run stream events (spec §4.1 / §6.1). Stored in `run_events`, announced on NOTIFY channel
// `run_events` with the run id as payload, streamed by the API as NDJSON or SSE.

export const RUN_EVENTS_CHANNEL = 'run_events';

export interface Session {
  blockId: string;
  blockType: string;
  blockName: string;
  status: 'completed' | 'error' | 'skipped';
  output: unknown;
  /** Sanitized, at most 500 characters; sent only with trace=full. */
  error?: string;
}

export type RunEvent =
  | { type: 'run_start'; runId: string; documentId: string }
  | { type: 'block_start'; blockId: string; blockType: string }
  | { type: 'block_chunk'; blockId: string; delta: string }
  /** `reused`: a retry took the output of the run it retries (docs/long-runs.md). */
  | { type: 'block_complete'; blockId: string; output: unknown; reused?: true }
  | { type: 'block_end'; blockId: string }
  /** A `wait` or `approval` block began to wait (docs/long-runs.md), between its block_start and block_complete. */
  | { type: 'block_waiting'; blockId: string; blockType: string; until?: string; expiresAt?: string; prompt?: string; approvalUrl?: string }
  | { type: 'block_error'; blockId: string; error: string }
  | { type: 'run_complete'; runId: string; sessions: Session[]; completedBlocks: number; duration: number; globalCtx?: Record<string, unknown> }
  | { type: 'run_error'; runId: string; error: string; executionStatus: string; sessions?: Session[] };

export type RunEventType = RunEvent['type'];
export const terminalEventTypes: ReadonlySet<RunEventType> = new Set(['run_complete', 'run_error']);
