import { randomUUID } from 'node:crypto';
import type { KyselyPlugin } from 'kysely';
import { exampleGraph } from '../../shared/documents/example-graph.js';
import { RunEventHub } from '../../shared/app-runs/event-log.js';
import { insertRunEvents, type StoredRunEvent } from '../../shared/app-runs/run-events-repository.js';
import type { Database } from '../../shared/db/client.js';
import { PgListener } from '../../shared/db/listener.js';
import { createTeam, createUser } from '../../shared/identity/service.js';
import { publishDirect } from '../harness/apps.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

// What the event hub's tests share (event-log*.test.ts): a real PostgreSQL with a published app,
// hubs of their own on their own LISTEN connections (each with the poll interval a test needs),
// runs recorded as the run pipeline records them, and a Database that counts its statements.

export interface EventLogFixture {
  stack: TestStack;
  /** A hub following `run_events` on a LISTEN connection of its own. */
  hub(pollMs: number): Promise<RunEventHub>;
  /** The file's database, counting the statements that go through it (the hub's reads, when followers pass it). */
  countingDb(): { db: Database; statements(): number };
  /** A `running` run and its run_start; the id of run_start. */
  recordRun(): Promise<{ runId: string; startId: number }>;
  /** Appends block events (one statement, one notification); their ids. */
  append(runId: string, count: number): Promise<number[]>;
  complete(runId: string): Promise<void>;
  /** Every event of a generator until it ends. */
  drain(events: AsyncIterable<StoredRunEvent>): Promise<StoredRunEvent[]>;
  close(): Promise<void>;
}

export async function createEventLogFixture(): Promise<EventLogFixture> {
  const stack = await createTestStack();
  const user = await createUser(stack.db, { email: `${randomUUID()}@example.test` });
  const team = await createTeam(stack.db, { ownerId: user.id, name: 'Events' });
  const owner = { teamId: team.id, ...(await publishDirect(stack.db, exampleGraph, { teamId: team.id })) };
  const listeners: PgListener[] = [];
  let key = 0;

  return {
    stack,
    async hub(pollMs) {
      const listener = new PgListener(stack.databaseUrl);
      listeners.push(listener);
      const hub = new RunEventHub({ pollMs });
      hub.follow(listener);
      await listener.start();
      return hub;
    },
    countingDb() {
      let statements = 0;
      const counter: KyselyPlugin = {
        transformQuery: (args) => args.node,
        transformResult: (args) => { statements++; return Promise.resolve(args.result); },
      };
      return { db: stack.db.withPlugin(counter), statements: () => statements };
    },
    async recordRun() {
      const runId = randomUUID();
      await stack.db.insertInto('runs').values({
        id: runId, deployment_id: owner.deploymentId, document_id: owner.documentId, team_id: owner.teamId, trigger_source: 'api-key', inputs: '{}',
      }).execute();
      const start = await stack.db.insertInto('run_events').values({ run_id: runId, event_key: 'run_start', type: 'run_start', payload: '{}' })
        .returning('id').executeTakeFirstOrThrow();
      return { runId, startId: Number(start.id) };
    },
    async append(runId, count) {
      const keys = Array.from({ length: count }, () => `b:chunk:${key++}`);
      await insertRunEvents(stack.db, runId, keys.map((k) => ({ key: k, event: { type: 'block_chunk', blockId: 'b', delta: k } })));
      const rows = await stack.db.selectFrom('run_events').select('id').where('run_id', '=', runId).where('event_key', 'in', keys).orderBy('id').execute();
      return rows.map((r) => Number(r.id));
    },
    complete: (runId) => insertRunEvents(stack.db, runId, [
      { key: 'run_complete', event: { type: 'run_complete', runId, sessions: [], completedBlocks: 0, duration: 0 } },
    ]),
    async drain(events) {
      const all: StoredRunEvent[] = [];
      for await (const event of events) all.push(event);
      return all;
    },
    async close() {
      for (const listener of listeners) await listener.close();
      await stack.close();
    },
  };
}
