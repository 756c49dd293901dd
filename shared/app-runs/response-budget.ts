// The response cap of run results (spec §4.1, setting `run.response_limit`): JSON mode answers 413
// `response_too_large`, a stream ends with `run_error` instead of the oversized event.

/** §7.2 JSON body of 413 `response_too_large`. */
export interface ResponseTooLargeBody {
  runId: string;
  error: 'response_too_large';
  message: string;
  actualBytes: number;
  limitBytes: number;
  executionStatus: 'response_too_large';
  hint: string;
}

/**
 * The JSON-mode response cap (`run.response_limit`). Feed it the byte size of each piece of the
 * response as it is built; once the total goes over `maxBytes`, `add` returns false (and keeps
 * returning false), and `actualBytes` is the total at that moment: a lower bound of the full size,
 * since the caller stops building the response there. Exactly `maxBytes` is allowed.
 */
export class ResponseBudget {
  private total = 0;
  private exceededAt: number | null = null;

  constructor(readonly maxBytes: number) {}

  add(bytes: number): boolean {
    if (this.exceededAt !== null) return false;
    this.total += bytes;
    if (this.total > this.maxBytes) {
      this.exceededAt = this.total;
      return false;
    }
    return true;
  }

  get exceeded(): boolean { return this.exceededAt !== null; }

  /** Bytes counted so far (frozen at the first excess). */
  get usedBytes(): number { return this.total; }

  /** The total when the budget was first exceeded (a lower bound), or null while within budget. */
  get actualBytes(): number | null { return this.exceededAt; }

  /** §7.2 body for 413 `response_too_large`. */
  tooLargeBody(runId: string): ResponseTooLargeBody {
    const actualBytes = this.exceededAt ?? this.total;
    return {
      runId,
      error: 'response_too_large',
      message: `The run's response is at least ${actualBytes} bytes, over the limit of ${this.maxBytes} bytes`,
      actualBytes,
      limitBytes: this.maxBytes,
      executionStatus: 'response_too_large',
      hint: 'Run in streaming mode (stream: true, NDJSON or SSE) to receive large outputs, '
        + 'or ask an administrator to raise the site setting run.response_limit.',
    };
  }
}
