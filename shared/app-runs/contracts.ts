// The contract between the run workflow, its starters and its activities: every type that crosses
// a workflow or activity boundary of an app run, in one module that both sides import. The
// workflow renders every template itself and passes resolved values, so an activity never sees
// other blocks' data. Values too large for workflow history travel as claims (claims.ts): a request
// the workflow rendered, a result, a PDF input's value.

import type { SearchAttributePair } from '@temporalio/common';
import type { RunStatus } from '../db/types.js';
import type { Claim } from './claims.js';
import type { RunEvent, Session } from './events.js';
import type { Graph } from '../documents/graph.js';
import type { RunPlan } from './run-plan.js';
import type { RunCallback } from './callbacks/schemas.js';

/** `appRunWorkflow`'s argument (`app-run-<runId>`). */
export interface AppRunInput {
  runId: string;
  /** trace=full: the run_complete event carries `globalCtx`. */
  trace: boolean;
  timeoutSeconds: number | null;
  /** The graph and inputs, when the starter passed them (`planForRun.inline`, run-service.ts); otherwise `loadRunPlan` reads them. */
  plan?: RunPlan;
  /**
   * The run's final write goes through the `appRuns.finish` sink as the workflow task that ends the
   * run completes, instead of the `finishRun` local activity: no second activation, no marker in
   * history (docs/app-runs.md "How a run ends"). Every starter sets it; it is absent in the histories
   * of runs started before it existed, which replay through the local activity.
   */
  finishBySink?: boolean;
  /**
   * Where the run's selected events are POSTed (docs/long-runs.md "Background runs and callbacks"),
   * vetted at admission. Absent on runs without one, whose histories stay as they were.
   */
  callback?: RunCallback;
  /** A retry from the failed block: the run whose completed blocks' outputs are reused. Absent otherwise. */
  reuseFrom?: string;
}

/** The start options every start of `appRunWorkflow` sets (client start or child): search attributes and summary. */
export interface AppRunStartOptions { typedSearchAttributes: SearchAttributePair[]; staticSummary: string }

export interface AppRunResult {
  runId: string;
  /**
   * How the run ended: the `runs` row's final status, unless the run was finished elsewhere first
   * (cancelled, or ended by the reconciler), which the row then says. Runs ended through the sink
   * report their own ending, as the sink returns nothing to workflow code.
   */
  status: RunStatus;
}

/** An event with its idempotency key, unique per run (`<blockId>:block_start`, `run_complete`, …). */
export interface KeyedRunEvent {
  key: string;
  event: RunEvent;
}

/** How a run ended, as the workflow hands it to `finishRun`. */
export type RunOutcome =
  | { status: 'completed'; sessions: Session[]; completedBlocks: number; globalCtx?: Record<string, unknown> }
  | { status: 'failed' | 'timed_out' | 'cancelled'; error: string; sessions?: Session[] };

/** The run's final write: `finishRun`'s input (local activity) and the `appRuns.finish` sink's. */
export interface FinishRunInput {
  runId: string;
  outcome: RunOutcome;
  /** The walk's events not written yet: written before the terminal one, in the same statement. */
  events?: KeyedRunEvent[];
}

/**
 * The run workflow's sinks: calls out of workflow code that return nothing, made by the worker
 * right after the workflow task's code ran and before the task completes (activities/app-runs/finish-sink.ts).
 */
export type AppRunSinks = {
  appRuns: {
    /** Idempotent; the worker fails the workflow task when it cannot write, so Temporal retries it. */
    finish(input: FinishRunInput): void;
  };
};

/** What a block can read, as the workflow holds it (values may be claims): `evaluateBlockInActivity`'s input. */
export interface ActivityEvaluationInput {
  runId: string;
  blockId: string;
  graph: Graph;
  /** The outputs so far, in the workflow's order (block id, output). */
  outputs: [string, unknown][];
  inputs: Record<string, unknown>;
  trigger: unknown;
}

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'HEAD';

/** The `http` block's request, templates already rendered. */
export interface HttpBlockRequest {
  runId: string; blockId: string; method: HttpMethod; url: string; headers: Record<string, string>;
  /** A string is sent as is; null/undefined sends no body; anything else is sent as JSON. */
  body: unknown;
}
/** The `http` block's output. `body` is parsed JSON when the response says it is JSON, else text. */
export interface HttpBlockResult { status: number; headers: Record<string, string>; body: unknown }

/** The `llm` block's request, templates already rendered. */
export interface LlmBlockRequest {
  runId: string; blockId: string; model: string; prompt: string; system?: string; temperature?: number; maxTokens?: number;
  /** A team provider's name (docs/llm-providers.md); only the name crosses the workflow, never a URL or key. */
  provider?: string;
  /**
   * Inputs passed to the model as files (config `files`): only their names cross the workflow; the
   * activity reads each raw value (a file handle, `data:` URI or base64; never a PDF's text) from the run's inputs.
   */
  files?: LlmFileInput[];
}
/** An `input` block an `llm` block passes natively: its value is `inputs[name] ?? inputs[blockId] ?? default`. */
export interface LlmFileInput { blockId: string; name: string; default?: unknown }
export interface LlmBlockResult { text: string; usage: { promptTokens: number; completionTokens: number; totalTokens: number } | null }

/**
 * An I/O block's call whose rendering is stored as `request:<blockId>` (an `IoBlockCall` of
 * evaluate.ts); the activity resolves it before running.
 */
export interface ClaimedIoRequest { runId: string; blockId: string; claimedRequest: Claim }

/**
 * An `input` block of `valueType: 'pdf'` whose value is a PDF: a file handle (`wf-file:<id>` or
 * `storage://<id>`, read from the run's project), `data:application/pdf;base64,…` or bare base64.
 */
export interface PdfInputRequest { runId: string; blockId: string; value: string | Claim; inputName?: string }
/** A large text comes back as a claim (`output:<blockId>`). */
export interface PdfInputResult { text: string | Claim; pages: number }

/** One callback event to deliver: the stored event by its key, or the run's terminal event. */
export interface CallbackDeliveryInput {
  runId: string;
  callback: RunCallback;
  event: { key: string } | { terminal: true };
}
/** `not_selected`: the event (e.g. the terminal one) is not among the callback's events. */
export interface CallbackDeliveryResult { eventId: number; status: 'delivered' | 'not_selected' }

// Runs that wait (docs/long-runs.md): the `wait` and `approval` blocks' activities and signal.

/**
 * A `wait` or `approval` block begins to wait. `events`: what the walk gathered and has not written
 * (the block's `block_start` among them), written before `block_waiting`. `nowMs`: workflow time.
 * Templates are rendered by the workflow; the activity applies the cap (`runs.max_wait_seconds`).
 */
export interface EnterRunWaitInput {
  runId: string;
  blockId: string;
  events: KeyedRunEvent[];
  nowMs: number;
  wait?: { seconds?: unknown; until?: unknown };
  approval?: { prompt: string; fields: Record<string, unknown> | null; timeoutSeconds?: number };
}
/**
 * `problem`: the rendered config is unusable (the block fails; nothing was written). `seconds: 0`
 * (an `until` that has just passed): nothing was written, the block completes at once.
 * `runOpen: false`: the run was finished elsewhere.
 */
export type EnterRunWaitResult =
  | { kind: 'waiting'; seconds: number; until: string }
  | { kind: 'no_wait' }
  | { kind: 'problem'; message: string }
  | { kind: 'run_closed' };

/** How an approval was decided (the signal's payload, and `settleRunApproval`'s answer when a decision came first). */
export interface ApprovalDecision { approved: boolean; data: unknown; decidedBy: string; decidedAt: string }
/** `approvalDecided`: sent by the approval routes after the decision is stored (shared/app-runs/approvals). */
export const APPROVAL_DECIDED_SIGNAL = 'approvalDecided';
export interface ApprovalDecidedSignal { blockId: string; decision: ApprovalDecision }
