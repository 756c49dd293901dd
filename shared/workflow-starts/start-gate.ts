/**
 * How many workflow starts one process has in flight to Temporal at most. The engine serves starts
 * one store write at a time (the embedded server has a single SQLite connection), so more calls in
 * flight only wait longer inside it. Without a bound, 10,000 background runs posted at 32-way put
 * over a thousand starts in flight: each took 3 to 18 s, the server's own tasks timed out behind
 * them, and starts that passed their deadline were taken for an outage (docs/decisions.md "A
 * bounded number of workflow starts in flight"). 32 is far above what a healthy server has in
 * flight (a start takes milliseconds), and far below the thousand behind which its own work timed out.
 */
export const MAX_STARTS_IN_FLIGHT = 32;

/**
 * A process's bound on workflow starts in flight (the start path, start-path.ts). A start that
 * must happen now waits for a free place, in order of arrival; one that may be made later by the
 * dispatcher (a background run) is not made here at all while every place is taken.
 */
export class StartGate {
  private inFlight = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly limit = MAX_STARTS_IN_FLIGHT) {}

  /** Runs `start` once fewer than the limit are in flight. */
  async run<T>(start: () => Promise<T>): Promise<T> {
    if (this.inFlight >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.inFlight += 1;
    try {
      return await start();
    } finally {
      this.release();
    }
  }

  /** Runs `start` if a place is free now; `null` (nothing started) when every place is taken. */
  runIfFree<T>(start: () => Promise<T>): Promise<T> | null {
    if (this.inFlight >= this.limit) return null;
    return this.run(start);
  }

  /** A finished start hands its place to the next in line, or gives it back. */
  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.inFlight -= 1;
  }
}
