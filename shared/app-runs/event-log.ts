import { sql, type RawBuilder } from 'kysely';
import { executePrepared, type Database } from '../db/client.js';
import type { PgListener } from '../db/listener.js';
import { RUN_EVENTS_CHANNEL, terminalEventTypes, type RunEvent, type RunEventType } from './events.js';

export interface StoredRunEvent { id: number; type: RunEventType; payload: Record<string, unknown> }

/**
 * Events as rows `e(key, type, payload, ord)` for a FROM clause: `unnest` over three array
 * parameters, `ord` their position, so `ORDER BY e.ord` inserts them (and numbers their ids) in order.
 */
export function eventRows(events: ReadonlyArray<{ key: string; event: RunEvent }>): RawBuilder<unknown> {
  const keys: string[] = []; const types: string[] = []; const payloads: string[] = [];
  for (const { key, event: { type, ...payload } } of events) {
    keys.push(key); types.push(type); payloads.push(JSON.stringify(payload));
  }
  return sql`unnest(${keys}::text[], ${types}::text[], ${payloads}::jsonb[]) WITH ORDINALITY AS e(key, type, payload, ord)`;
}

/**
 * Appends events idempotently (a retried writer re-sends the same keys, which are ignored) and
 * NOTIFYs `run_events` with the run id when something was appended; the notification is delivered
 * on commit. One statement: the rows are inserted in the order given, so their ids follow it.
 */
export async function appendRunEvents(db: Database, runId: string, events: Array<{ key: string; event: RunEvent }>): Promise<void> {
  if (events.length === 0) return;
  await sql`
    WITH appended AS (
      INSERT INTO run_events (run_id, event_key, type, payload)
      SELECT ${runId}::uuid, e.key, e.type, e.payload FROM ${eventRows(events)}
      ORDER BY e.ord
      ON CONFLICT (run_id, event_key) DO NOTHING
      RETURNING 1
    )
    SELECT pg_notify(${RUN_EVENTS_CHANNEL}, ${runId}) WHERE EXISTS (SELECT 1 FROM appended)
  `.execute(db);
}

export async function readRunEventsAfter(db: Database, runId: string, afterId: number): Promise<StoredRunEvent[]> {
  const rows = await executePrepared(db, 'read_run_events_after', db.selectFrom('run_events').select(['id', 'type', 'payload'])
    .where('run_id', '=', runId).where('id', '>', afterId).orderBy('id').limit(1000).compile());
  return rows.map((r) => ({ id: r.id, type: r.type as RunEventType, payload: r.payload as Record<string, unknown> }));
}

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
    for (;;) {
      if (options.signal?.aborted) return;
      // Register interest before reading, so an event committed between the read and the wait still wakes us.
      const next = this.nextNotification(runId, options.pollMs ?? 1_000);
      const onAbort = () => next.cancel();
      options.signal?.addEventListener('abort', onAbort, { once: true });
      try {
        const batch = await readRunEventsAfter(db, runId, lastId);
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
