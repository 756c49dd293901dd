import type { Database } from '../db/client.js';
import { isDatabaseUnavailable } from '../dependency-errors.js';
import { terminalEventTypes } from './events.js';
import { RUN_EVENTS_READ_LIMIT, type StoredRunEvent } from './run-events-repository.js';

// The followers of a run's event log and the run's shared reader (its tail), as RunEventHub
// (event-log.ts) drives them: a follower holds what its consumer has not taken yet; a tail holds a
// run's followers, the watches waiting for its next notification and where its shared reads are.

/** How long a follower of a run waits through a database outage before it gives up. */
const OUTAGE_PATIENCE_MS = 60_000;

/**
 * Events a follower holds for a consumer that does not take them (a slow SSE client). Beyond it
 * the follower leaves the shared reads, so it neither holds up the run's other followers nor grows
 * without bound; once its consumer has taken what it holds, it reads the rest from the table.
 */
export const FOLLOWER_QUEUE_LIMIT = RUN_EVENTS_READ_LIMIT;

export const isTerminal = (event: StoredRunEvent) => terminalEventTypes.has(event.type);

/** One `events` reader: its position in the run's log and the events it holds for its consumer. */
export class Follower {
  private readonly queue: StoredRunEvent[] = [];
  private head = 0;
  /** Takes the shared reads of its run (it is not behind them). */
  joined = false;
  /** Its terminal event is held: nothing more is taken. */
  finished = false;
  failure: { error: unknown } | null = null;
  private outageSince: number | null = null;
  private waiting: (() => void) | null = null;

  constructor(public lastId: number, readonly terminalOnly: boolean) {}

  get held(): number {
    return this.queue.length - this.head;
  }

  shift(): StoredRunEvent | undefined {
    if (this.head === this.queue.length) return undefined;
    const event = this.queue[this.head++]!;
    if (this.head === this.queue.length) { this.queue.length = 0; this.head = 0; }
    return event;
  }

  /**
   * Events read after its `lastId` or before it, in order: takes those after it (a JSON caller only
   * the terminal one and `block_waiting`) up to the terminal event. `bounded` (the shared reads): when the queue is
   * full it stops and leaves them, to read the rest itself.
   */
  take(events: readonly StoredRunEvent[], bounded: boolean): void {
    this.outageSince = null;
    for (const event of events) {
      if (this.finished) break;
      if (event.id <= this.lastId) continue;
      if (bounded && this.held >= FOLLOWER_QUEUE_LIMIT) { this.joined = false; break; }
      // A JSON caller also learns that the run began to wait: it answers 202 then (run-reply.ts).
      if (!this.terminalOnly || isTerminal(event) || event.type === 'block_waiting') this.queue.push(event);
      this.lastId = event.id;
      if (isTerminal(event)) this.finished = true;
    }
    this.wake();
  }

  /** A read failed: waits through a database outage up to its patience, fails otherwise. */
  readFailed(error: unknown): void {
    if (isDatabaseUnavailable(error)) {
      this.outageSince ??= Date.now();
      if (Date.now() - this.outageSince <= OUTAGE_PATIENCE_MS) return;
    }
    this.failure = { error };
    this.wake();
  }

  /** Settles at its next wake-up; call only after checking there is nothing to do. */
  next(): Promise<void> {
    return new Promise((resolve) => { this.waiting = resolve; });
  }

  wake(): void {
    const waiting = this.waiting;
    this.waiting = null;
    waiting?.();
  }
}

export interface Watch { since: number; wake(terminal?: StoredRunEvent): void }

/** A followed run: its followers, the watches waiting for its next notification, its shared reads. */
export class RunTail {
  readonly followers = new Set<Follower>();
  readonly watches = new Set<Watch>();
  db: Database | null = null;
  /** The highest event id a shared read returned: a follower before it reads up to it on its own. */
  position: number | null = null;
  reading = false;
  /** Read (or begun to read) since the last poll: the poll skips it. */
  readSincePoll = true;
  /** Wake-ups so far: a follower that read on its own meanwhile asks for a shared read when it joins. */
  wakes = 0;
  /** Reads of followers behind the tail in flight, by the id they read after: followers at the same id share one. */
  readonly backlogReads = new Map<number, { events: Promise<StoredRunEvent[]>; wakes: number }>();

  constructor(readonly runId: string) {}

  /** Where a shared read starts: the earliest position among the followers taking it; null when none does. */
  readFrom(): number | null {
    let from: number | null = null;
    for (const follower of this.followers) {
      if (follower.joined && !follower.finished && (from === null || follower.lastId < from)) from = follower.lastId;
    }
    return from;
  }

  get idle(): boolean {
    return this.followers.size === 0 && this.watches.size === 0;
  }
}
