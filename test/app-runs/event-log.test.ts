import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleGraph } from '../../shared/documents/example-graph.js';
import { insertRunEvents, type StoredRunEvent } from '../../shared/app-runs/run-events-repository.js';
import { createTeam, createUser } from '../../shared/identity/service.js';
import { publishDirect } from '../harness/apps.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

// The run event hub (shared/app-runs/event-log.ts) on a real PostgreSQL and its LISTEN connection:
// a follower registered before a run's workflow starts (`watch`) waits for the run's notification
// instead of reading first, and still misses nothing.

describe('following a run with a watch registered before its workflow starts', () => {
  let stack: TestStack;
  let owner: { teamId: string; deploymentId: string; documentId: string };

  beforeAll(async () => {
    stack = await createTestStack();
    const user = await createUser(stack.db, { email: `${randomUUID()}@example.test` });
    const team = await createTeam(stack.db, { ownerId: user.id, name: 'Events' });
    owner = { teamId: team.id, ...(await publishDirect(stack.db, exampleGraph, { teamId: team.id })) };
  });
  afterAll(() => stack?.close());

  /** A `running` run and its run_start, as the run pipeline records them; the id of run_start. */
  async function recordRun(): Promise<{ runId: string; startId: number }> {
    const runId = randomUUID();
    await stack.db.insertInto('runs').values({
      id: runId, deployment_id: owner.deploymentId, document_id: owner.documentId, team_id: owner.teamId, trigger_source: 'api-key', inputs: '{}',
    }).execute();
    const start = await stack.db.insertInto('run_events').values({ run_id: runId, event_key: 'run_start', type: 'run_start', payload: '{}' })
      .returning('id').executeTakeFirstOrThrow();
    return { runId, startId: Number(start.id) };
  }

  const complete = (runId: string) => insertRunEvents(stack.db, runId, [
    { key: 'run_complete', event: { type: 'run_complete', runId, sessions: [], completedBlocks: 0, duration: 0 } },
  ]);

  async function follow(runId: string, options: Parameters<TestStack['deps']['runEvents']['events']>[2]): Promise<{ events: StoredRunEvent[]; ms: number }> {
    const started = performance.now();
    const events: StoredRunEvent[] = [];
    for await (const event of stack.deps.runEvents.events(stack.db, runId, options)) events.push(event);
    return { events, ms: performance.now() - started };
  }

  it('an event written after the follower started waiting wakes it through NOTIFY, well before the slow poll', async () => {
    const { runId, startId } = await recordRun();
    const watch = stack.deps.runEvents.watch(runId, 10_000);
    const following = follow(runId, { afterId: startId, watch, pollMs: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    await complete(runId);
    const { events, ms } = await following;
    expect(events.map((e) => e.type)).toEqual(['run_complete']);
    expect(ms).toBeLessThan(5_000);
  });

  it('an event written between the watch and the follower\'s start is read at once', async () => {
    const { runId, startId } = await recordRun();
    const watch = stack.deps.runEvents.watch(runId, 10_000);
    await complete(runId);
    // The notification arrives on the listener connection; the follower starts after it.
    await expect.poll(() => watch.woken, { timeout: 5_000 }).toBe(true);
    const { events, ms } = await follow(runId, { afterId: startId, watch, pollMs: 10_000 });
    expect(events.map((e) => e.type)).toEqual(['run_complete']);
    expect(ms).toBeLessThan(1_000);
  });

  it('an event written without a notification is found by the slow poll, not lost', async () => {
    const { runId, startId } = await recordRun();
    const watch = stack.deps.runEvents.watch(runId, 300);
    await stack.db.insertInto('run_events').values({ run_id: runId, event_key: 'run_complete', type: 'run_complete', payload: '{}' }).execute();
    const { events, ms } = await follow(runId, { afterId: startId, watch, pollMs: 300 });
    expect(events.map((e) => e.type)).toEqual(['run_complete']);
    expect(ms).toBeLessThan(3_000);
  });

  // The run's final write NOTIFYs `<runId> <terminal event as JSON>` (run-events-repository.ts).
  const notifyTerminal = (runId: string, event: object | string) =>
    sql`SELECT pg_notify('run_events', ${`${runId} ${typeof event === 'string' ? event : JSON.stringify(event)}`})`.execute(stack.db);

  it('a JSON caller takes the terminal event its notification carried, without reading the table', async () => {
    const { runId, startId } = await recordRun();
    const carried = { id: startId + 1000, type: 'run_complete', payload: { runId, sessions: [], completedBlocks: 0, duration: 7 } };
    // Only in the notification, not in the table: a follower that read would never see it.
    const watch = stack.deps.runEvents.watch(runId, 10_000);
    const following = follow(runId, { afterId: startId, watch, pollMs: 10_000, terminalOnly: true });
    await notifyTerminal(runId, carried);
    const { events, ms } = await following;
    expect(events).toEqual([carried]);
    expect(ms).toBeLessThan(5_000);
  });

  it('a follower of every event reads the log even when the notification carried the terminal event', async () => {
    const { runId, startId } = await recordRun();
    const watch = stack.deps.runEvents.watch(runId, 10_000);
    const following = follow(runId, { afterId: startId, watch, pollMs: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    await stack.db.insertInto('run_events').values({ run_id: runId, event_key: 'x:block_end', type: 'block_end', payload: '{"blockId":"x"}' }).execute();
    await complete(runId);
    const stored = await stack.db.selectFrom('run_events').select(['id', 'type', 'payload']).where('run_id', '=', runId).where('type', '=', 'run_complete').executeTakeFirstOrThrow();
    await notifyTerminal(runId, stored);
    const { events } = await following;
    expect(events.map((e) => e.type)).toEqual(['block_end', 'run_complete']);
  });

  it('a notification whose event is not a terminal one, or not JSON, only wakes the JSON caller, which then reads', async () => {
    for (const bad of ['{"id":1,"type":"block_end","payload":{}}', 'not json', '{"id":"1","type":"run_complete","payload":{}}']) {
      const { runId, startId } = await recordRun();
      const watch = stack.deps.runEvents.watch(runId, 10_000);
      const following = follow(runId, { afterId: startId, watch, pollMs: 10_000, terminalOnly: true });
      await notifyTerminal(runId, bad);
      await new Promise((resolve) => setTimeout(resolve, 100));
      await complete(runId);
      const { events } = await following;
      expect(events.map((e) => e.type)).toEqual(['run_complete']);
      expect(events[0]!.id).toBeGreaterThan(startId);
    }
  });

  it('a follower that is aborted before it reads leaves no waiter behind', async () => {
    const { runId, startId } = await recordRun();
    const watch = stack.deps.runEvents.watch(runId, 10_000);
    const abort = new AbortController();
    abort.abort();
    expect(await follow(runId, { afterId: startId, watch, signal: abort.signal })).toMatchObject({ events: [] });
    // Cancelled: the watch settles without its notification.
    await watch.promise;
    expect(watch.woken).toBe(false);
  });
});
