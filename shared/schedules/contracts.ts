// The contract between the scheduled-run workflow, its starters (Temporal Schedules, the trigger
// route) and its activities: every type that crosses one of their boundaries.

import type { AppRunInput, AppRunStartOptions } from '../app-runs/contracts.js';
import type { RunResult } from '../app-runs/run-result.js';
import type { ScheduleLogStatus } from '../db/types.js';

/** `scheduledRunWorkflow`'s argument. */
export interface ScheduledRunInput {
  scheduleId: string;
  /** `POST /schedules/:id/trigger`: runs even when the schedule is disabled, and only once. */
  manual?: boolean;
}

export type ScheduledRunOutcome =
  | { success: true; result: RunResult }
  | { success: false; error: string; result?: RunResult; skipped?: boolean };

export interface ScheduledAttemptRequest {
  scheduleId: string;
  /** Chosen by the workflow, so a retried activity writes the same log row and the same run. */
  logId: string;
  attemptKey: string;
  /** When Temporal meant to fire; null for a manual trigger. */
  scheduledAt: string | null;
  manual: boolean;
}

export type ScheduledAttempt =
  | { kind: 'skipped'; reason: string }
  | { kind: 'refused'; error: string }
  | {
      kind: 'started'; runId: string; maxRetries: number;
      /** `appRunWorkflow`'s input, as the run service built it (absent in histories from before it was passed). */
      workflowInput?: AppRunInput;
      /** Its search attributes and summary (absent in older histories). */
      startOptions?: AppRunStartOptions;
      /** Only in histories from before `workflowInput`: the child's timeout. */
      timeoutSeconds?: number | null;
    };

export interface FinishedAttempt { status: ScheduleLogStatus; error: string | null; result: RunResult }

