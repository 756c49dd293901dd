import type { Database } from '../db/client.js';
import type { PgListener } from '../db/listener.js';
import { RUN_EVENTS_CHANNEL, terminalEventTypes } from './events.js';
import { Follower, RunTail, isTerminal, type Watch } from './run-followers.js';
import { RUN_EVENTS_READ_LIMIT, readRunEventsAfter, readRunEventsAfterEach, type StoredRunEvent } from './run-events-repository.js';

// Following runs' event logs (docs/app-runs.md "Event log"). The cost in queries grows with the
// runs being followed, not with their followers: each followed run has one shared reader (its
// tail) that reads the run's new events once per wake-up (NOTIFY, the slow poll, the listener's
// reconnect) and hands them to every follower of the run. A follower that starts behind the tail
// (a resume from an older id) or falls behind it (a consumer that does not keep up) reads from the
// table on its own until it has caught up, then takes the tail's reads again; followers behind at
// the same id at the same time (clients reconnecting together) share that read too.

/** A registered interest in a run's next notification; `woken` once it came (or the poll interval passed). */
export interface RunNotification {
  promise: Promise<void>;
  woken: boolean;
  /** The run's terminal event, when the notification that woke it carried it (the run's final write). */
  terminal?: StoredRunEvent;
  cancel(): void;
}

/**
 * Streams runs' events from the table: everything after `afterId`, then whatever arrives, until
 * the terminal event. NOTIFY wakes a run's readers at once; a slow poll covers a missed notification.
 */
export class RunEventHub {
  private readonly tails = new Map<string, RunTail>();
  /** Runs woken whose shared read is still to start (a run being read is read again after). */
  private readonly due = new Set<RunTail>();
  private flushScheduled = false;
  private poller: NodeJS.Timeout | null = null;
  private readonly pollMs: number;

  /** `pollMs`: how often a followed run that no notification woke is read anyway (a missed notification). */
  constructor(options: { pollMs?: number } = {}) {
    this.pollMs = options.pollMs ?? 1_000;
  }

  follow(listener: PgListener): void {
    listener.on(RUN_EVENTS_CHANNEL, (payload) => this.notified(payload));
    // Notifications may have been missed while the connection was down: every run is read again.
    listener.onReconnect(() => { for (const tail of [...this.tails.values()]) this.wake(tail); });
  }

  /**
   * Runs followed or watched now, their followers and watches, and the most events one follower
   * holds for its consumer (tests check that nothing is left behind and that memory is bounded).
   */
  get following(): { runs: number; followers: number; watches: number; mostHeld: number } {
    let followers = 0; let watches = 0; let mostHeld = 0;
    for (const tail of this.tails.values()) {
      followers += tail.followers.size;
      watches += tail.watches.size;
      for (const follower of tail.followers) mostHeld = Math.max(mostHeld, follower.held);
    }
    return { runs: this.tails.size, followers, watches, mostHeld };
  }

  /** A notification: `<runId>`, or `<runId> <terminal event as JSON>` from the run's final write. */
  private notified(payload: string): void {
    const space = payload.indexOf(' ');
    const tail = this.tails.get(space < 0 ? payload : payload.slice(0, space));
    if (tail) this.wake(tail, space < 0 ? undefined : terminalEventOf(payload.slice(space + 1)));
  }

  /**
   * Something may have been written to the run: its watches are woken, a JSON caller takes a
   * terminal event the notification carried, and the other followers get one shared read.
   */
  private wake(tail: RunTail, terminal?: StoredRunEvent): void {
    tail.wakes++;
    for (const watch of tail.watches) watch.wake(terminal);
    tail.watches.clear();
    let read = false;
    for (const follower of tail.followers) {
      if (terminal && follower.terminalOnly) follower.take([terminal], false);
      else if (follower.joined) read ||= !follower.finished;
      else follower.wake();
    }
    if (read) this.requestRead(tail);
    this.dropIfIdle(tail);
  }

  private requestRead(tail: RunTail): void {
    this.due.add(tail);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    // Runs woken in the same turn of the event loop share one statement.
    setImmediate(() => this.flush());
  }

  /** Starts the shared reads of the due runs that are not being read, one statement per database. */
  private flush(): void {
    this.flushScheduled = false;
    const byDb = new Map<Database, RunTail[]>();
    for (const tail of this.due) {
      if (tail.reading || !tail.db) continue;
      this.due.delete(tail);
      const tails = byDb.get(tail.db) ?? [];
      tails.push(tail);
      byDb.set(tail.db, tails);
    }
    for (const [db, tails] of byDb) void this.read(db, tails);
  }

  private async read(db: Database, tails: RunTail[]): Promise<void> {
    const reads: Array<{ tail: RunTail; from: number }> = [];
    for (const tail of tails) {
      const from = tail.readFrom();
      if (from === null) continue;
      tail.reading = true;
      tail.readSincePoll = true;
      reads.push({ tail, from });
    }
    if (reads.length === 0) return;
    let found: Map<string, StoredRunEvent[]>;
    try {
      found = reads.length === 1
        ? new Map([[reads[0]!.tail.runId, await readRunEventsAfter(db, reads[0]!.tail.runId, reads[0]!.from)]])
        : await readRunEventsAfterEach(db, reads.map(({ tail, from }) => ({ runId: tail.runId, afterId: from })));
    } catch (error) {
      // Retried at the next wake-up: a notification, or the poll while PostgreSQL is away.
      for (const { tail } of reads) {
        tail.reading = false;
        for (const follower of tail.followers) if (follower.joined) follower.readFailed(error);
      }
      this.flushDue();
      return;
    }
    for (const { tail, from } of reads) {
      tail.reading = false;
      const events = found.get(tail.runId) ?? [];
      const last = events.at(-1);
      if (last) tail.position = Math.max(tail.position ?? 0, last.id);
      // A follower that joined during the read after its start waits for the next one (it was requested).
      for (const follower of tail.followers) if (follower.joined && follower.lastId >= from) follower.take(events, true);
      if (events.length === RUN_EVENTS_READ_LIMIT) this.due.add(tail);
    }
    this.flushDue();
  }

  private flushDue(): void {
    if (this.due.size > 0 && !this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /**
   * The slow poll, once per interval for the whole hub: watches older than the interval are
   * woken (their follower reads first), runs not read since the last poll are read (one
   * statement for all), and followers waiting out an outage on their own try again.
   */
  private poll(): void {
    const now = Date.now();
    for (const tail of [...this.tails.values()]) {
      for (const watch of tail.watches) {
        if (now - watch.since < this.pollMs) continue;
        tail.watches.delete(watch);
        watch.wake();
      }
      if (!tail.readSincePoll && tail.readFrom() !== null) this.due.add(tail);
      tail.readSincePoll = false;
      for (const follower of tail.followers) if (!follower.joined) follower.wake();
      this.dropIfIdle(tail);
    }
    this.flushDue();
  }

  private tailOf(runId: string): RunTail {
    let tail = this.tails.get(runId);
    if (!tail) {
      tail = new RunTail(runId);
      this.tails.set(runId, tail);
      this.poller ??= setInterval(() => this.poll(), this.pollMs).unref();
    }
    return tail;
  }

  private dropIfIdle(tail: RunTail): void {
    if (!tail.idle || this.tails.get(tail.runId) !== tail) return;
    this.tails.delete(tail.runId);
    this.due.delete(tail);
    if (this.tails.size === 0 && this.poller) {
      clearInterval(this.poller);
      this.poller = null;
    }
  }

  /**
   * Interest in a run's next notification, registered now. A reader that starts later passes it to
   * `events` (`watch`): a run that was just recorded and whose workflow has not been started yet
   * has no event after `run_start`, so that reader waits for the notification instead of reading
   * first. Woken by the notification, or by the poll after its interval (a missed notification).
   */
  watch(runId: string): RunNotification {
    const tail = this.tailOf(runId);
    let resolve!: () => void;
    const notification: RunNotification = {
      promise: new Promise<void>((r) => { resolve = r; }),
      woken: false,
      cancel: () => {
        if (tail.watches.delete(watch)) this.dropIfIdle(tail);
        resolve();
      },
    };
    const watch: Watch = {
      since: Date.now(),
      wake: (terminal) => {
        notification.woken = true;
        if (terminal) notification.terminal = terminal;
        resolve();
      },
    };
    tail.watches.add(watch);
    return notification;
  }

  /**
   * The run's events after `afterId` until the terminal one. `terminalOnly` (a caller waiting for
   * the JSON result) is given the terminal event only, and a terminal event that came with its
   * notification is taken as it is, without a read.
   */
  async *events(db: Database, runId: string, options: { afterId?: number; signal?: AbortSignal; watch?: RunNotification; terminalOnly?: boolean } = {}): AsyncGenerator<StoredRunEvent> {
    const { signal, watch } = options;
    const terminalOnly = options.terminalOnly ?? false;
    if (signal?.aborted || (terminalOnly && watch?.terminal)) {
      watch?.cancel();
      if (!signal?.aborted && watch?.terminal) yield watch.terminal;
      return;
    }
    const tail = this.tailOf(runId);
    tail.db ??= db;
    const follower = new Follower(options.afterId ?? 0, terminalOnly);
    tail.followers.add(follower);
    // The tail wakes the follower from now on. Nothing can have been written since a watch began
    // until it is woken, so a follower with an unwoken watch waits for the next wake-up; any other
    // reads first (the shared read, or its own when it is behind the tail).
    const readFirst = !watch || watch.woken;
    watch?.cancel();
    if (tail.position === null || follower.lastId >= tail.position) this.join(tail, follower, readFirst);
    const onAbort = () => follower.wake();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      for (;;) {
        if (signal?.aborted) return;
        const event = follower.shift();
        if (event) {
          yield event;
          if (isTerminal(event)) return;
        } else if (follower.failure) {
          throw follower.failure.error;
        } else if (!follower.joined) {
          await this.catchUp(db, tail, follower);
        } else {
          await follower.next();
        }
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      tail.followers.delete(follower);
      this.dropIfIdle(tail);
    }
  }

  private join(tail: RunTail, follower: Follower, read: boolean): void {
    follower.joined = true;
    if (read) this.requestRead(tail);
  }

  /**
   * A follower behind the tail reads from the table on its own (at most a read's worth, which its
   * consumer takes before the next), and joins the shared reads once it has reached them.
   */
  private async catchUp(db: Database, tail: RunTail, follower: Follower): Promise<void> {
    const read = this.backlogAfter(db, tail, follower.lastId);
    let events: StoredRunEvent[];
    try {
      events = await read.events;
    } catch (error) {
      // A follower outlives a database restart: it reads on once PostgreSQL answers (its run goes
      // on meanwhile), and gives up, as 503, only when the outage lasts.
      follower.readFailed(error);
      if (!follower.failure) await follower.next();
      return;
    }
    follower.take(events, false);
    if (follower.finished || events.length === RUN_EVENTS_READ_LIMIT) return;
    // Nothing newer in the table, or the tail's reads begin where this one ended: the follower takes
    // them from now on, and a wake-up that came during its read (which its read may have missed)
    // asks for a shared read.
    if (events.length === 0 || tail.position === null || follower.lastId >= tail.position) this.join(tail, follower, tail.wakes !== read.wakes);
  }

  /**
   * The run's events after `afterId`, read once for all the followers that ask while it is read
   * (many clients resuming from one id), with the run's wake-ups counted when it began.
   */
  private backlogAfter(db: Database, tail: RunTail, afterId: number): { events: Promise<StoredRunEvent[]>; wakes: number } {
    let read = tail.backlogReads.get(afterId);
    if (!read) {
      read = { events: readRunEventsAfter(db, tail.runId, afterId).finally(() => tail.backlogReads.delete(afterId)), wakes: tail.wakes };
      tail.backlogReads.set(afterId, read);
    }
    return read;
  }
}

/** The terminal event a notification carried, or undefined when it is not one (the reader then reads the table). */
function terminalEventOf(json: string): StoredRunEvent | undefined {
  try {
    const event = JSON.parse(json) as Partial<StoredRunEvent>;
    const valid = typeof event.id === 'number' && typeof event.type === 'string' && terminalEventTypes.has(event.type)
      && typeof event.payload === 'object' && event.payload !== null;
    return valid ? { id: event.id!, type: event.type!, payload: event.payload! } : undefined;
  } catch {
    return undefined;
  }
}
