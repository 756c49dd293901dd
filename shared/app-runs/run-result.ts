import type { StoredRunEvent } from './run-events-repository.js';

export interface RunResult {
  runId: string; documentId: string; sessions: unknown; duration: unknown; status: string; timedOut: boolean;
  globalCtx?: unknown; error?: unknown;
}

/**
 * The non-streaming run result (spec §2.20), built from the run's terminal event. The JSON mode of
 * the run endpoints, webhook trigger calls and scheduled runs all answer with this shape.
 */
export function runResultOf(runId: string, documentId: string, terminal: StoredRunEvent | undefined): RunResult {
  const p = (terminal?.payload ?? {}) as Record<string, unknown>;
  if (terminal?.type === 'run_complete') {
    return { runId, documentId, sessions: p.sessions, duration: p.duration, status: 'completed', timedOut: false, ...(p.globalCtx ? { globalCtx: p.globalCtx } : {}) };
  }
  const status = typeof p.executionStatus === 'string' ? p.executionStatus : 'failed';
  // A failed run's run_error carries the sessions of the blocks that ran (spec §2.20).
  const sessions = Array.isArray(p.sessions) ? p.sessions : [];
  return { runId, documentId, sessions, duration: null, status, timedOut: status === 'timed_out', error: p.error ?? 'The run did not complete' };
}
