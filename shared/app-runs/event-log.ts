import type { Database } from '../db/client.js';
import type { PgListener } from '../db/listener.js';
import { isDatabaseUnavailable } from '../dependency-errors.js';
import { RUN_EVENTS_CHANNEL, terminalEventTypes } from './events.js';
import { readRunEventsAfter, type StoredRunEvent } from './run-events-repository.js';

/** How long a follower of a run waits through a database outage before it gives up. */
const OUTAGE_PATIENCE_MS = 60_000;

/**
 * Streams a run's events from the table: everything after `afterId`, then whatever arrives, until
 * the terminal event. NOTIFY wakes readers at once; a slow poll covers a missed notification.
 */
export class RunEventHub {
  private readonly waiters = new Map<string, Set<() => void>>();

  follow(listener: PgListener): void {
    listener.on(RUN_EVENTS_CHANNEL, (runId) => this.wake(runId));
    listener.onReconnect(() => { for (const runId of [...this.waiters.keys()]) this.wake(runId); });
  }

  private wake(runId: string): void {
    const set = this.waiters.get(runId);
    if (!set) return;
    this.waiters.delete(runId);
    for (const resolve of set) resolve();
  }

  private nextNotification(runId: string, timeoutMs: number): { promise: Promise<void>; cancel(): void } {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => { resolve = r; });
    const set = this.waiters.get(runId) ?? new Set();
    set.add(resolve);
    this.waiters.set(runId, set);
    const timer = setTimeout(resolve, timeoutMs);
    return { promise: promise.finally(() => clearTimeout(timer)), cancel: () => { set.delete(resolve); clearTimeout(timer); resolve(); } };
  }

  async *events(db: Database, runId: string, options: { afterId?: number; signal?: AbortSignal; pollMs?: number } = {}): AsyncGenerator<StoredRunEvent> {
    let lastId = options.afterId ?? 0;
    let outageSince: number | null = null;
    for (;;) {
      if (options.signal?.aborted) return;
      // Register interest before reading, so an event committed between the read and the wait still wakes us.
      const next = this.nextNotification(runId, options.pollMs ?? 1_000);
      const onAbort = () => next.cancel();
      options.signal?.addEventListener('abort', onAbort, { once: true });
      try {
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
      } finally {
        next.cancel();
        options.signal?.removeEventListener('abort', onAbort);
      }
    }
  }
}
