import type { Database } from '../db/client.js';
import type { PgListener } from '../db/listener.js';
import { isDatabaseUnavailable } from '../dependency-errors.js';
import { RUN_EVENTS_CHANNEL, terminalEventTypes } from './events.js';
import { readRunEventsAfter, type StoredRunEvent } from './run-events-repository.js';

/** A registered interest in a run's next notification; `woken` once it came (or the poll interval passed). */
export interface RunNotification {
  promise: Promise<void>;
  woken: boolean;
  /** The run's terminal event, when the notification that woke it carried it (the run's final write). */
  terminal?: StoredRunEvent;
  cancel(): void;
}

/** How long a follower of a run waits through a database outage before it gives up. */
const OUTAGE_PATIENCE_MS = 60_000;

/**
 * Streams a run's events from the table: everything after `afterId`, then whatever arrives, until
 * the terminal event. NOTIFY wakes readers at once; a slow poll covers a missed notification.
 */
export class RunEventHub {
  private readonly waiters = new Map<string, Set<(terminal?: StoredRunEvent) => void>>();

  follow(listener: PgListener): void {
    listener.on(RUN_EVENTS_CHANNEL, (payload) => this.notified(payload));
    listener.onReconnect(() => { for (const runId of [...this.waiters.keys()]) this.wake(runId); });
  }

  /** A notification: `<runId>`, or `<runId> <terminal event as JSON>` from the run's final write. */
  private notified(payload: string): void {
    const space = payload.indexOf(' ');
    const runId = space < 0 ? payload : payload.slice(0, space);
    if (!this.waiters.has(runId)) return;
    this.wake(runId, space < 0 ? undefined : terminalEventOf(payload.slice(space + 1)));
  }

  private wake(runId: string, terminal?: StoredRunEvent): void {
    const set = this.waiters.get(runId);
    if (!set) return;
    this.waiters.delete(runId);
    for (const wakeWaiter of set) wakeWaiter(terminal);
  }

  /**
   * Interest in a run's next notification, registered now. `events` registers one before each read;
   * a reader that starts later registers it early (`events`' `watch`): a run that was just recorded
   * and whose workflow has not been started yet has no event after `run_start`, so that reader
   * waits for the notification instead of reading first.
   */
  watch(runId: string, pollMs = 1_000): RunNotification {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => { resolve = r; });
    const set = this.waiters.get(runId) ?? new Set<(terminal?: StoredRunEvent) => void>();
    const notification: RunNotification = {
      promise: promise.finally(() => clearTimeout(timer)),
      woken: false,
      cancel: () => { set.delete(wake); clearTimeout(timer); resolve(); },
    };
    const wake = (terminal?: StoredRunEvent) => {
      notification.woken = true;
      if (terminal) notification.terminal = terminal;
      resolve();
    };
    set.add(wake);
    this.waiters.set(runId, set);
    // The slow poll: a notification that never comes (missed, or no reader left) leaves no waiter behind.
    const timer = setTimeout(() => { set.delete(wake); wake(); }, pollMs);
    return notification;
  }

  /**
   * The run's events after `afterId` until the terminal one. `terminalOnly` (a caller waiting for
   * the JSON result) may skip the others: a terminal event that came with its notification is then
   * taken as it is, without a read.
   */
  async *events(db: Database, runId: string, options: { afterId?: number; signal?: AbortSignal; pollMs?: number; watch?: RunNotification; terminalOnly?: boolean } = {}): AsyncGenerator<StoredRunEvent> {
    let lastId = options.afterId ?? 0;
    let outageSince: number | null = null;
    let watch = options.watch;
    for (;;) {
      if (options.signal?.aborted) {
        watch?.cancel();
        return;
      }
      // Register interest before reading, so an event committed between the read and the wait still wakes us.
      const next = watch ?? this.watch(runId, options.pollMs);
      // Nothing can have been written since the watch began until it is woken (or its poll is due).
      const readFirst = !watch || watch.woken;
      watch = undefined;
      const onAbort = () => next.cancel();
      options.signal?.addEventListener('abort', onAbort, { once: true });
      // A JSON caller's terminal event may come with its notification; then nothing needs reading
      // (a carried event means the watch was woken, so `readFirst` holds).
      const carried = () => (options.terminalOnly ? next.terminal : undefined);
      try {
        if (!readFirst) {
          await next.promise;
        } else if (!carried()) {
          let batch: StoredRunEvent[] = [];
          try {
            batch = await readRunEventsAfter(db, runId, lastId);
            outageSince = null;
          } catch (error) {
            // A follower outlives a database restart: it reads on once PostgreSQL answers (its run
            // goes on meanwhile), and gives up, as 503, only when the outage lasts.
            if (!isDatabaseUnavailable(error)) throw error;
            outageSince ??= Date.now();
            if (Date.now() - outageSince > OUTAGE_PATIENCE_MS) throw error;
          }
          for (const event of batch) {
            lastId = event.id;
            yield event;
            if (terminalEventTypes.has(event.type)) return;
          }
          if (batch.length === 0) await next.promise;
        }
        const terminal = carried();
        if (terminal) {
          yield terminal;
          return;
        }
      } finally {
        next.cancel();
        options.signal?.removeEventListener('abort', onAbort);
      }
    }
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
