import type { ProbeErrorCode } from './imap-probe.js';

// What the polling workflow and its activities pass each other (plain data: it is in the history).

export interface ConnectorPollInput {
  bindingId: string;
  /** Polls done by earlier runs of this workflow (continue-as-new carries it on). */
  pollsBefore?: number;
}

export type PollOutcome =
  /** The binding is gone or disabled, or its connection revoked: the workflow ends. */
  | { kind: 'stopped'; reason: string }
  /** Not now (the connector's breaker is open, the connection not active, the document not published): look again later. */
  | { kind: 'paused'; reason: string; pollSeconds: number }
  | {
    kind: 'polled';
    /** Mail recorded in the ledger by this poll (0 on a re-baseline). */
    newEvents: number;
    /** This binding's dispatches still waiting for a run, oldest first (earlier polls' too). */
    pending: string[];
    pollSeconds: number;
    /** More mail waits in the mailbox than one poll takes: poll again at once. */
    more?: boolean;
    /** The upstream failed this time; what was pending is still dispatched. */
    errorCode?: ProbeErrorCode;
  };

export type DispatchOutcome =
  | { kind: 'dispatched'; runId: string; workflowId: string }
  /** 404: the token or the binding no longer checks out; the dispatch is dropped, never retried. */
  | { kind: 'dropped' }
  /** 402, 409 or 429: not executed; try again after `retryAfterSeconds` with a new token. */
  | { kind: 'retry'; status: number; retryAfterSeconds: number };

/** The polling workflow's Update: poll now rather than at the next tick; answers that poll's new mail. */
export const POLL_NOW_UPDATE = 'pollNow';
export interface PollNowResult { newEvents: number }
