import { readFile, readdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '../../shared/db/client.js';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../../shared/db/embedded.js';
import { migrateToLatest } from '../../shared/db/migrate.js';
import { RUN_BASE_COST_MILLI } from '../harness/billing.js';
import { readSse, type SseEvent } from '../harness/sse.js';
import type { TestStack } from '../harness/stack.js';
import { until } from '../harness/until.js';
import { startLlmAppStack, type LlmAppStack } from './llm-app-stack.js';

// Issue 18, scenario two: PostgreSQL is SIGKILLed under a working service. Requests are answered
// 503 `dependency_unavailable` (postgres) with Retry-After, never 500; a run in flight waits for the
// database (its activities retry) and completes; its stream, broken with the database, is resumed
// with Last-Event-ID and has every event exactly once; the API and worker reconnect by themselves.
// This file brings its own PostgreSQL (persistent data, as `npm start` runs it) so it can kill it.
/** The processes whose parent is `pid` (Linux /proc). */
async function childPids(pid: number): Promise<number[]> {
  const children: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // `pid (comm) state ppid …`: comm may hold spaces, so read after its closing parenthesis.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid === pid) children.push(Number(entry));
  }
  return children;
}

describe('faults: PostgreSQL is killed', () => {
  let postgres: EmbeddedPostgresHandle;
  let dataDir: string;
  let fixture: LlmAppStack;
  let stack: TestStack;
  let base: string;
  let teamId: string;

  const auth = () => fixture.auth;
  const run = (body: Record<string, unknown>, signal?: AbortSignal) => fixture.run(body, signal);
  /** A restart right after a kill may find the old server's shared memory still held by its dying backends: retried. */
  const startPostgres = () => until(() => startEmbeddedPostgres({ dataDir, persistent: true }).catch(() => null), 30_000, 'PostgreSQL to start', 500);

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'wfapp-pg-outage-'));
    postgres = await startPostgres();
    const admin = createDb(postgres.url, { poolSize: 1 });
    await sql`CREATE DATABASE wfapp`.execute(admin);
    await admin.destroy();
    const migrating = createDb(postgres.urlFor('wfapp'), { poolSize: 1 });
    await migrateToLatest(migrating);
    await migrating.destroy();

    fixture = await startLlmAppStack({ repeat: 4, databaseUrl: postgres.urlFor('wfapp') });
    ({ stack, base } = fixture);
    teamId = fixture.tenant.team.id;
  }, 120_000);
  afterAll(async () => {
    await fixture?.close();
    await postgres?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('503 with Retry-After during the outage; in-flight runs complete, a JSON caller waits through it, a resumed stream has every event once', async () => {
    const client = new AbortController();
    const inFlight = await run({ stream: true, format: 'sse' }, client.signal);
    const runId = inFlight.headers.get('x-run-id')!;
    const seen: SseEvent[] = [];
    const firstPart = readSse(inFlight.body!, (events) => { seen.splice(0, seen.length, ...events); return false; }).catch(() => seen);
    await until(async () => seen.some((e) => e.type === 'block_chunk'), 10_000, 'the run streaming');

    // A caller waiting for a JSON result, its run in flight too: it waits through the outage.
    const waiting = run({ stream: false });
    await until(async () => (await stack.db.selectFrom('runs').select('id').where('status', '=', 'running').execute()).length === 2, 10_000, 'the JSON run in flight');

    // The postmaster, by the pid in its own lock file (under root the library starts it through a wrapper).
    const postmasterPid = Number((await readFile(path.join(dataDir, 'cluster', 'postmaster.pid'), 'utf8')).split('\n')[0]);
    // The whole server dies at once, backends included, as when its host or container goes: a
    // backend left to notice its postmaster's death on its own may hold the shared memory long
    // enough, on a loaded machine, to keep the restart below from starting for over a minute.
    const backends = await childPids(postmasterPid);
    for (const pid of [postmasterPid, ...backends]) process.kill(pid, 'SIGKILL');

    for (const body of [{ stream: false }, { stream: true, format: 'sse' }]) {
      const refused = await run(body);
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('5');
      expect(await refused.json()).toEqual({ error: 'dependency_unavailable', message: 'PostgreSQL is unavailable; retry shortly', dependency: 'postgres' });
    }
    const readiness = await fetch(`${base}/readyz`);
    expect(readiness.status).toBe(503);
    expect((await readiness.json() as { failed: string[] }).failed).toContain('postgres');
    // The client loses its connection during the outage (or the API ends the stream it can no longer read).
    client.abort();
    const received = [...(await firstPart)];

    postgres = await startPostgres();

    // The client resumes after the last event it saw.
    const resumed = await fetch(`${base}/api/runs/${runId}/events?format=sse`, { headers: { ...auth(), 'last-event-id': String(received.at(-1)!.id) } });
    expect(resumed.status).toBe(200);
    const rest = await readSse(resumed.body!);
    const all = [...received, ...rest];
    expect(all.at(-1)?.type).toBe('run_complete');
    const stored = await stack.db.selectFrom('run_events').select('id').where('run_id', '=', runId).orderBy('id').execute();
    expect(all.map((e) => e.id)).toEqual(stored.map((e) => e.id));

    // The JSON caller got its result: the run went on, and so did the wait for it.
    const waited = await waiting;
    expect({ status: waited.status, body: await waited.json() }).toMatchObject({ status: 200, body: { status: 'completed' } });

    // The service is whole again: a new run completes; nothing is left running; each run charged once.
    await until(async () => (await fetch(`${base}/readyz`)).status === 200, 15_000, 'readiness');
    const after = await run({ stream: false });
    expect(after.status).toBe(200);
    expect((await after.json() as { status: string }).status).toBe('completed');
    expect(await stack.db.selectFrom('runs').select('id').where('status', '=', 'running').execute()).toEqual([]);
    const charges = await stack.db.selectFrom('credit_transactions').select(['reference', 'amount_milli'])
      .where('team_id', '=', teamId).where('reason', 'in', ['run', 'run_refund']).execute();
    expect(charges).toHaveLength(3);
    expect(charges.every((c) => c.amount_milli === -RUN_BASE_COST_MILLI)).toBe(true);
  }, 120_000);
});
