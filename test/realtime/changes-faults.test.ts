import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grantCredits } from '../../shared/billing/service.js';
import { createDb } from '../../shared/db/client.js';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../../shared/db/embedded.js';
import { migrateToLatest } from '../../shared/db/migrate.js';
import { startRealtimeTestStack, type RealtimeTestStack } from '../harness/realtime.js';
import { until } from '../harness/until.js';
import { statuses, waitFor } from './clients.js';

// Row changes through faults (issue 37): PostgreSQL killed and back, the slot acknowledged only for
// what was delivered. This file brings its own PostgreSQL (persistent data) so it can kill it.

async function childPids(pid: number): Promise<number[]> {
  const children: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid === pid) children.push(Number(entry));
  }
  return children;
}

type Change = { eventType: string; new: Record<string, unknown> };

describe('realtime postgres_changes through faults', () => {
  let postgres: EmbeddedPostgresHandle;
  let dataDir: string;
  let rt: RealtimeTestStack;

  const startPostgres = () => until(() => startEmbeddedPostgres({ dataDir, persistent: true }).catch(() => null), 30_000, 'PostgreSQL to start', 500);

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'wfapp-pg-realtime-'));
    postgres = await startPostgres();
    const admin = createDb(postgres.url, { poolSize: 1 });
    await sql`CREATE DATABASE wfapp`.execute(admin);
    await admin.destroy();
    const migrating = createDb(postgres.urlFor('wfapp'), { poolSize: 1 });
    await migrateToLatest(migrating);
    await migrating.destroy();
    rt = await startRealtimeTestStack({}, { databaseUrl: postgres.urlFor('wfapp') });
  }, 120_000);
  afterAll(async () => {
    await rt?.close();
    await postgres?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('the slot is acknowledged up to what was delivered; after PostgreSQL is killed and back the channel rejoins by itself and changes flow again, none twice', async () => {
    const owner = await rt.make.user('owner');
    const team = await rt.make.team(owner.id, 'Faults');
    const client = await rt.client(await rt.make.jwt(owner.id));
    const got: Change[] = [];
    const channel = client.channel('ledger').on('postgres_changes' as never, { event: 'INSERT', schema: 'public', table: 'credit_transactions' } as never, (c: Change) => { got.push(c); });
    const seen = statuses(channel);
    await seen.ready;

    const slot = async () => (await sql<{ slot_name: string; temporary: boolean; confirmed: string }>`
      SELECT slot_name, temporary, confirmed_flush_lsn::text AS confirmed FROM pg_replication_slots WHERE database = current_database()`.execute(rt.stack.db)).rows;
    expect(await slot()).toEqual([expect.objectContaining({ temporary: true })]);

    await grantCredits(rt.stack.db, { teamId: team.id, amountMilli: 1_000 });
    const afterFirst = (await sql<{ lsn: string }>`SELECT pg_current_wal_lsn()::text AS lsn`.execute(rt.stack.db)).rows[0]!.lsn;
    await waitFor(() => got.length === 1, 'the first grant');
    // Delivered, then confirmed: the slot holds no WAL for it (checked by PostgreSQL's own LSN order).
    await until(async () => (await sql<{ ok: boolean }>`SELECT confirmed_flush_lsn >= ${afterFirst}::pg_lsn AS ok FROM pg_replication_slots WHERE database = current_database()`.execute(rt.stack.db)).rows[0]?.ok, 15_000, 'the slot confirmed past the first grant', 100);

    const postmasterPid = Number((await readFile(path.join(dataDir, 'cluster', 'postmaster.pid'), 'utf8')).split('\n')[0]);
    const backends = await childPids(postmasterPid);
    for (const pid of [postmasterPid, ...backends]) process.kill(pid, 'SIGKILL');
    await waitFor(() => seen.list.some((s) => s.status === 'CHANNEL_ERROR'), 'the channel told of the lost log', 10_000);
    postgres = await startPostgres();

    // supabase-js rejoins by itself: SUBSCRIBED again (where a client refetches what it missed).
    await waitFor(() => seen.list.at(-1)?.status === 'SUBSCRIBED' && seen.list.filter((s) => s.status === 'SUBSCRIBED').length === 2, 'the rejoin', 40_000);
    await until(async () => (await slot().catch(() => [])).length === 1, 10_000, 'a new slot', 100);

    await grantCredits(rt.stack.db, { teamId: team.id, amountMilli: 2_000 });
    await waitFor(() => got.length >= 2, 'the grant after the restart', 10_000);
    await grantCredits(rt.stack.db, { teamId: team.id, amountMilli: 3_000 });
    await waitFor(() => got.length >= 3, 'one more', 10_000);
    expect(got.map((c) => c.new.amount_milli)).toEqual([1_000, 2_000, 3_000]);
  }, 120_000);
});
