import { dependencyUnavailable, isTemporalUnavailable } from '../shared/dependency-errors.js';
import { withTimeout } from '../shared/timeout.js';
import { checkTemporal, type TemporalHealthConnection } from './connection.js';

export interface TemporalAvailabilityOptions {
  /** Pause between probes while Temporal is down. */
  probeIntervalMs?: number;
  /** How long one probe may take before it counts as failed. */
  probeTimeoutMs?: number;
  log?: (line: string) => void;
}

/**
 * Remembers that Temporal is down, so that during an outage a request that needs Temporal is
 * refused at once (503 + Retry-After) instead of each one spending the client's ~10 s of retries
 * (measured: a workflow start on the native connection to a stopped server fails after 6-10 s),
 * holding a socket and a handler the whole time.
 *
 * Only a failed call marks it down, never a probe on a schedule: while Temporal is up this costs
 * nothing. While it is down, one probe runs every `probeIntervalMs` until one answers.
 */
export class TemporalAvailability {
  readonly #connection: TemporalHealthConnection;
  readonly #probeIntervalMs: number;
  readonly #probeTimeoutMs: number;
  readonly #log: (line: string) => void;
  #available = true;
  #timer: NodeJS.Timeout | null = null;
  #probing = false;
  #closed = false;
  /**
   * The native client ignores the deadline for a server that refuses connections: it retries for
   * ~10 s whatever `withDeadline` says (measured 9.8 s with a 1 s deadline). A probe therefore waits
   * at most `probeTimeoutMs` for it, and the next probe joins the same call instead of stacking up
   * another 10 s of retries; that call succeeds as soon as the server is back.
   */
  #pendingCheck: Promise<boolean> | null = null;

  constructor(connection: TemporalHealthConnection, options: TemporalAvailabilityOptions = {}) {
    this.#connection = connection;
    this.#probeIntervalMs = options.probeIntervalMs ?? 1_000;
    this.#probeTimeoutMs = options.probeTimeoutMs ?? 2_000;
    this.#log = options.log ?? (() => {});
  }

  get available(): boolean {
    return this.#available;
  }

  /**
   * An error from a Temporal call: when it says Temporal cannot be reached, marks Temporal
   * unavailable and probes until it answers. Returns whether it was such an outage error.
   */
  reportFailure(error: unknown): boolean {
    if (!isTemporalUnavailable(error)) return false;
    if (this.#available) {
      this.#available = false;
      this.#log(`Temporal unavailable (${(error as Error)?.message?.split('\n')[0]}); refusing Temporal requests until a probe answers`);
    }
    this.#scheduleProbe();
    return true;
  }

  /** Throws dependencyUnavailable('temporal') while unavailable. */
  assertAvailable(): void {
    if (!this.#available) throw dependencyUnavailable('temporal');
  }

  /** Stops probing; the state stays as it was (the API is shutting down). */
  close(): void {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  #scheduleProbe(): void {
    if (this.#closed || this.#timer || this.#probing) return;
    this.#timer = setTimeout(() => void this.#probe(), this.#probeIntervalMs);
    // Never the reason the process stays up (tests, a shutting-down API).
    this.#timer.unref();
  }

  async #probe(): Promise<void> {
    this.#timer = null;
    this.#probing = true;
    const answered = await this.#check(); // never rejects
    this.#probing = false;
    if (this.#closed) return; // a probe that was under way when closed changes nothing
    if (answered) {
      if (!this.#available) this.#log('Temporal answers again');
      this.#available = true;
    } else {
      this.#scheduleProbe();
    }
  }

  #check(): Promise<boolean> {
    this.#pendingCheck ??= checkTemporal(this.#connection, this.#probeTimeoutMs)
      .then(() => true, () => false)
      .finally(() => { this.#pendingCheck = null; });
    return withTimeout(this.#pendingCheck, this.#probeTimeoutMs, () => new Error('probe timed out')).catch(() => false);
  }
}
