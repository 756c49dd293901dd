import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunEventHub, RunNotification } from '../../shared/app-runs/event-log.js';
import type { StoredRunEvent } from '../../shared/app-runs/run-events-repository.js';
import { createEventLogFixture, type EventLogFixture } from './event-log-fixture.js';

// The run event hub (shared/app-runs/event-log.ts) on a real PostgreSQL and its LISTEN connection:
// a follower registered before a run's workflow starts (`watch`) waits for the run's notification
// instead of reading first, and still misses nothing.

describe('following a run with a watch registered before its workflow starts', () => {
  let fixture: EventLogFixture;
  /** Its slow poll is far beyond every wait here: what arrives came through NOTIFY. */
  let hub: RunEventHub;

  beforeAll(async () => {
    fixture = await createEventLogFixture();
    hub = await fixture.hub(10_000);
  });
  afterAll(() => fixture?.close());

  async function follow(on: RunEventHub, runId: string, options: { afterId: number; watch?: RunNotification; terminalOnly?: boolean; signal?: AbortSignal }): Promise<{ events: StoredRunEvent[]; ms: number }> {
    const started = performance.now();
    const events = await fixture.drain(on.events(fixture.stack.db, runId, options));
    return { events, ms: performance.now() - started };
  }

  it('an event written after the follower started waiting wakes it through NOTIFY, well before the slow poll', async () => {
    const { runId, startId } = await fixture.recordRun();
    const watch = hub.watch(runId);
    const following = follow(hub, runId, { afterId: startId, watch });
    await new Promise((resolve) => setTimeout(resolve, 100));
    await fixture.complete(runId);
    const { events, ms } = await following;
    expect(events.map((e) => e.type)).toEqual(['run_complete']);
    expect(ms).toBeLessThan(5_000);
  });

  it('an event written between the watch and the follower\'s start is read at once', async () => {
    const { runId, startId } = await fixture.recordRun();
    const watch = hub.watch(runId);
    await fixture.complete(runId);
    // The notification arrives on the listener connection; the follower starts after it.
    await expect.poll(() => watch.woken, { timeout: 5_000 }).toBe(true);
    const { events, ms } = await follow(hub, runId, { afterId: startId, watch });
    expect(events.map((e) => e.type)).toEqual(['run_complete']);
    expect(ms).toBeLessThan(1_000);
  });

  it('an event written without a notification is found by the slow poll, not lost', async () => {
    const polling = await fixture.hub(300);
    const { runId, startId } = await fixture.recordRun();
    const watch = polling.watch(runId);
    await fixture.stack.db.insertInto('run_events').values({ run_id: runId, event_key: 'run_complete', type: 'run_complete', payload: '{}' }).execute();
    const { events, ms } = await follow(polling, runId, { afterId: startId, watch });
    expect(events.map((e) => e.type)).toEqual(['run_complete']);
    expect(ms).toBeLessThan(3_000);
  });

  // The run's final write NOTIFYs `<runId> <terminal event as JSON>` (run-events-repository.ts).
  const notifyTerminal = (runId: string, event: object | string) =>
    sql`SELECT pg_notify('run_events', ${`${runId} ${typeof event === 'string' ? event : JSON.stringify(event)}`})`.execute(fixture.stack.db);

  it('a JSON caller takes the terminal event its notification carried, without reading the table', async () => {
    const { runId, startId } = await fixture.recordRun();
    const carried = { id: startId + 1000, type: 'run_complete', payload: { runId, sessions: [], completedBlocks: 0, duration: 7 } };
    // Only in the notification, not in the table: a follower that read would never see it.
    const watch = hub.watch(runId);
    const following = follow(hub, runId, { afterId: startId, watch, terminalOnly: true });
    await notifyTerminal(runId, carried);
    const { events, ms } = await following;
    expect(events).toEqual([carried]);
    expect(ms).toBeLessThan(5_000);
  });

  it('a follower of every event reads the log even when the notification carried the terminal event', async () => {
    const { runId, startId } = await fixture.recordRun();
    const watch = hub.watch(runId);
    const following = follow(hub, runId, { afterId: startId, watch });
    await new Promise((resolve) => setTimeout(resolve, 100));
    await fixture.stack.db.insertInto('run_events').values({ run_id: runId, event_key: 'x:block_end', type: 'block_end', payload: '{"blockId":"x"}' }).execute();
    await fixture.complete(runId);
    const stored = await fixture.stack.db.selectFrom('run_events').select(['id', 'type', 'payload']).where('run_id', '=', runId).where('type', '=', 'run_complete').executeTakeFirstOrThrow();
    await notifyTerminal(runId, stored);
    const { events } = await following;
    expect(events.map((e) => e.type)).toEqual(['block_end', 'run_complete']);
  });

  it('a notification whose event is not a terminal one, or not JSON, only wakes the JSON caller, which then reads', async () => {
    for (const bad of ['{"id":1,"type":"block_end","payload":{}}', 'not json', '{"id":"1","type":"run_complete","payload":{}}']) {
      const { runId, startId } = await fixture.recordRun();
      const watch = hub.watch(runId);
      const following = follow(hub, runId, { afterId: startId, watch, terminalOnly: true });
      await notifyTerminal(runId, bad);
      await new Promise((resolve) => setTimeout(resolve, 100));
      await fixture.complete(runId);
      const { events } = await following;
      expect(events.map((e) => e.type)).toEqual(['run_complete']);
      expect(events[0]!.id).toBeGreaterThan(startId);
    }
  });

  it('a follower that is aborted before it reads leaves no waiter behind', async () => {
    const { runId, startId } = await fixture.recordRun();
    const watch = hub.watch(runId);
    const abort = new AbortController();
    abort.abort();
    expect(await follow(hub, runId, { afterId: startId, watch, signal: abort.signal })).toMatchObject({ events: [] });
    // Cancelled: the watch settles without its notification.
    await watch.promise;
    expect(watch.woken).toBe(false);
    expect(hub.following).toMatchObject({ runs: 0, followers: 0, watches: 0 });
  });

  it('a watch nobody takes up is dropped by the slow poll', async () => {
    const polling = await fixture.hub(200);
    const { runId } = await fixture.recordRun();
    const watch = polling.watch(runId);
    expect(polling.following).toMatchObject({ runs: 1, watches: 1 });
    await watch.promise;
    expect(watch.woken).toBe(true);
    expect(polling.following).toMatchObject({ runs: 0, followers: 0, watches: 0 });
  });
});
