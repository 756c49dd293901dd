import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FOLLOWER_QUEUE_LIMIT } from '../../shared/app-runs/run-followers.js';
import { createEventLogFixture, type EventLogFixture } from './event-log-fixture.js';

// The run event hub's cost (shared/app-runs/event-log.ts): a run's followers share its reads, so
// the statements grow with the runs being followed, not with their followers. Counted on a real
// PostgreSQL through a Database that counts what goes through it; the events are written on
// another (uncounted) connection.

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/**
 * Lets a read the followers' start asked for, and a notification of what was just written, be
 * done with before statements are counted (the start's read may already have found what the
 * notification then wakes the run for).
 */
const settle = () => sleep(200);

describe('followers of a run share its reads', () => {
  let fixture: EventLogFixture;

  beforeAll(async () => { fixture = await createEventLogFixture(); });
  afterAll(() => fixture?.close());

  const terminalIdOf = async (runId: string) => Number((await fixture.stack.db.selectFrom('run_events').select('id')
    .where('run_id', '=', runId).where('type', '=', 'run_complete').executeTakeFirstOrThrow()).id);

  it('50 followers of one run cost one read per notification, not one each', async () => {
    const hub = await fixture.hub(10_000);
    const { db, statements } = fixture.countingDb();
    const { runId, startId } = await fixture.recordRun();
    const received: number[][] = Array.from({ length: 50 }, () => []);
    const following = received.map(async (ids) => { for await (const event of hub.events(db, runId, { afterId: startId })) ids.push(event.id); });
    const written = await fixture.append(runId, 1);
    await expect.poll(() => received.every((ids) => ids.length === 1)).toBe(true);
    await settle();
    const before = statements();
    for (let i = 0; i < 10; i++) {
      written.push(...await fixture.append(runId, 2));
      await expect.poll(() => received.every((ids) => ids.length === written.length), { interval: 5 }).toBe(true);
    }
    expect(statements() - before).toBe(10);
    await fixture.complete(runId);
    await Promise.all(following);
    const terminalId = await terminalIdOf(runId);
    for (const ids of received) expect(ids).toEqual([...written, terminalId]);
    expect(hub.following).toEqual({ runs: 0, followers: 0, watches: 0, mostHeld: 0 });
  });

  it('notifications that come while the run is being read make one more read, not one each', async () => {
    const hub = await fixture.hub(10_000);
    const { db, statements } = fixture.countingDb();
    const { runId, startId } = await fixture.recordRun();
    const received: number[][] = Array.from({ length: 20 }, () => []);
    const following = received.map(async (ids) => { for await (const event of hub.events(db, runId, { afterId: startId })) ids.push(event.id); });
    const written = await fixture.append(runId, 1);
    await expect.poll(() => received.every((ids) => ids.length === 1)).toBe(true);
    await settle();
    const before = statements();
    // The table locked: the read the first notification starts waits, and 19 more come meanwhile.
    await fixture.stack.db.transaction().execute(async (trx) => {
      await sql`LOCK TABLE run_events IN ACCESS EXCLUSIVE MODE`.execute(trx);
      for (let i = 0; i < 20; i++) await sql`SELECT pg_notify('run_events', ${runId})`.execute(fixture.stack.db);
      await sleep(300);
      for (const key of ['late:1', 'late:2']) {
        const row = await trx.insertInto('run_events').values({ run_id: runId, event_key: key, type: 'block_chunk', payload: '{"blockId":"late","delta":"x"}' })
          .returning('id').executeTakeFirstOrThrow();
        written.push(Number(row.id));
      }
    });
    await sql`SELECT pg_notify('run_events', ${runId})`.execute(fixture.stack.db);
    await expect.poll(() => received.every((ids) => ids.length === written.length)).toBe(true);
    // The blocked read, the one after it for the 19 that came meanwhile, and the last notification's.
    expect(statements() - before).toBeLessThanOrEqual(3);
    await fixture.complete(runId);
    await Promise.all(following);
    const terminalId = await terminalIdOf(runId);
    for (const ids of received) expect(ids).toEqual([...written, terminalId]);
  });

  it('a follower that resumes from an older id reads its backlog itself, once, then takes the shared reads', async () => {
    const hub = await fixture.hub(10_000);
    const { db, statements } = fixture.countingDb();
    const { runId, startId } = await fixture.recordRun();
    const backlog = await fixture.append(runId, 30);
    const received: number[][] = Array.from({ length: 10 }, () => []);
    const following = received.map(async (ids) => { for await (const event of hub.events(db, runId, { afterId: backlog.at(-1)! })) ids.push(event.id); });
    const tail = await fixture.append(runId, 1);
    await expect.poll(() => received.every((ids) => ids.length === 1)).toBe(true);
    await settle();
    const before = statements();
    const late: number[] = [];
    const lateFollowing = (async () => { for await (const event of hub.events(db, runId, { afterId: startId })) late.push(event.id); })();
    await expect.poll(() => late.length).toBe(backlog.length + 1);
    expect(statements() - before).toBe(1);
    tail.push(...await fixture.append(runId, 1));
    await expect.poll(() => late.length === backlog.length + 2 && received.every((ids) => ids.length === 2)).toBe(true);
    // One read of its own, and one shared read for the 11 followers.
    expect(statements() - before).toBe(2);
    await fixture.complete(runId);
    await Promise.all([...following, lateFollowing]);
    const terminalId = await terminalIdOf(runId);
    expect(late).toEqual([...backlog, ...tail, terminalId]);
    for (const ids of received) expect(ids).toEqual([...tail, terminalId]);
  });

  it('followers that resume from the same older id at the same time share one read of their backlog', async () => {
    const hub = await fixture.hub(10_000);
    const { db, statements } = fixture.countingDb();
    const { runId, startId } = await fixture.recordRun();
    const backlog = await fixture.append(runId, 30);
    const ahead: number[] = [];
    const aheadFollowing = (async () => { for await (const event of hub.events(db, runId, { afterId: backlog.at(-1)! })) ahead.push(event.id); })();
    backlog.push(...await fixture.append(runId, 1));
    await expect.poll(() => ahead.length).toBe(1);
    await settle();
    const before = statements();
    // Clients reconnecting together with the same Last-Event-ID.
    const resumed: number[][] = Array.from({ length: 20 }, () => []);
    const resuming = resumed.map(async (ids) => { for await (const event of hub.events(db, runId, { afterId: startId })) ids.push(event.id); });
    await expect.poll(() => resumed.every((ids) => ids.length === backlog.length)).toBe(true);
    expect(statements() - before).toBe(1);
    await fixture.complete(runId);
    await Promise.all([aheadFollowing, ...resuming]);
    const terminalId = await terminalIdOf(runId);
    for (const ids of resumed) expect(ids).toEqual([...backlog, terminalId]);
  });

  it('a follower whose consumer stops taking events holds a bounded number, holds up nobody, and later reads the rest from the table', async () => {
    const hub = await fixture.hub(10_000);
    const { runId, startId } = await fixture.recordRun();
    const steady: number[] = [];
    const steadyFollowing = (async () => { for await (const event of hub.events(fixture.stack.db, runId, { afterId: startId })) steady.push(event.id); })();
    const lagging = hub.events(fixture.stack.db, runId, { afterId: startId });
    const written = await fixture.append(runId, 1);
    expect((await lagging.next()).value).toMatchObject({ id: written[0] });
    // The lagging consumer takes nothing more while 2,000 events are written.
    for (let i = 0; i < 5; i++) {
      written.push(...await fixture.append(runId, 400));
      await expect.poll(() => steady.length, { interval: 10 }).toBe(written.length);
    }
    expect(hub.following.mostHeld).toBeGreaterThan(0);
    expect(hub.following.mostHeld).toBeLessThanOrEqual(FOLLOWER_QUEUE_LIMIT);
    await fixture.complete(runId);
    await steadyFollowing;
    const rest: number[] = [];
    for (let next = await lagging.next(); !next.done; next = await lagging.next()) rest.push(next.value.id);
    const terminalId = await terminalIdOf(runId);
    expect(steady).toEqual([...written, terminalId]);
    expect([written[0], ...rest]).toEqual([...written, terminalId]);
    expect(hub.following).toEqual({ runs: 0, followers: 0, watches: 0, mostHeld: 0 });
  });

  it('the slow poll reads every followed run in one statement per interval, whatever the number of followers, and finds a missed notification', async () => {
    const hub = await fixture.hub(200);
    const { db, statements } = fixture.countingDb();
    const runs = await Promise.all(Array.from({ length: 20 }, () => fixture.recordRun()));
    const received = new Map(runs.map(({ runId }) => [runId, Array.from({ length: 5 }, () => [] as number[])]));
    const following = runs.flatMap(({ runId, startId }) => received.get(runId)!.map(async (ids) => {
      for await (const event of hub.events(db, runId, { afterId: startId })) ids.push(event.id);
    }));
    await sleep(500);
    const before = statements();
    await sleep(2_000);
    const polls = statements() - before;
    // A statement per interval at most (each run is read every other interval while nothing wakes
    // it), where a poll per follower would be 100 per interval.
    expect(polls).toBeGreaterThanOrEqual(1);
    expect(polls).toBeLessThanOrEqual(2_000 / 200 + 1);
    // Written without a notification: only the poll can find it.
    const rows = await fixture.stack.db.insertInto('run_events')
      .values(runs.map(({ runId }) => ({ run_id: runId, event_key: 'quiet', type: 'block_chunk', payload: '{"blockId":"q","delta":"q"}' })))
      .returning(['run_id', 'id']).execute();
    await expect.poll(() => rows.every((row) => received.get(row.run_id)!.every((ids) => ids.at(-1) === Number(row.id))), { timeout: 3_000 }).toBe(true);
    for (const { runId } of runs) await fixture.complete(runId);
    await Promise.all(following);
    expect(hub.following).toEqual({ runs: 0, followers: 0, watches: 0, mostHeld: 0 });
  });

  it('followers that start at different points while the run is written each get every event after their id once, in order', async () => {
    const hub = await fixture.hub(10_000);
    const { runId, startId } = await fixture.recordRun();
    const written = [startId];
    const writing = (async () => {
      for (let i = 0; i < 40; i++) {
        written.push(...await fixture.append(runId, 1 + (i % 4)));
        await sleep(5);
      }
    })();
    const followers: Array<Promise<{ afterId: number; ids: number[] }>> = [];
    for (let i = 0; i < 30; i++) {
      await sleep(7);
      const afterId = written[(i * 7) % written.length]!;
      followers.push(fixture.drain(hub.events(fixture.stack.db, runId, { afterId })).then((events) => ({ afterId, ids: events.map((e) => e.id) })));
    }
    await writing;
    await fixture.complete(runId);
    const terminalId = await terminalIdOf(runId);
    for (const { afterId, ids } of await Promise.all(followers)) expect(ids).toEqual([...written.filter((id) => id > afterId), terminalId]);
  });

  it('aborted followers and a consumer that stops leave nothing behind', async () => {
    const hub = await fixture.hub(10_000);
    const { runId, startId } = await fixture.recordRun();
    const abort = new AbortController();
    const following = Array.from({ length: 10 }, () => fixture.drain(hub.events(fixture.stack.db, runId, { afterId: startId, signal: abort.signal })));
    const stopped = hub.events(fixture.stack.db, runId, { afterId: startId });
    const watch = hub.watch(runId);
    await fixture.append(runId, 1);
    expect((await stopped.next()).done).toBe(false);
    await expect.poll(() => hub.following.followers).toBe(11);
    abort.abort();
    for (const events of await Promise.all(following)) expect(events.length).toBeLessThanOrEqual(1);
    await stopped.return(undefined);
    watch.cancel();
    expect(hub.following).toEqual({ runs: 0, followers: 0, watches: 0, mostHeld: 0 });
  });
});
