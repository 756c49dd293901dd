import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grantCredits } from '../../shared/billing/service.js';
import { addTeamMember } from '../../shared/identity/service.js';
import { snapshotSees } from '../../shared/realtime/changes/authorization-repository.js';
import { ChangeCapture, type CapturedTransaction } from '../../shared/realtime/changes/capture.js';
import { ChangeDispatcher } from '../../shared/realtime/changes/dispatcher.js';
import { JoinedChannel } from '../../shared/realtime/channel.js';
import { ChangeSubscriptions, validateBindings } from '../../shared/realtime/postgres-changes.js';
import { RelationCatalog } from '../../shared/realtime/relations.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { until } from '../harness/until.js';

// The parts of the change capture a websocket test cannot reach: acknowledgement only of what was
// delivered, the per-transaction bound, and one authorization statement per group of readers.
describe('realtime change capture', () => {
  let stack: TestStack;
  let make: ReturnType<typeof credentialFactory>;
  const captures: ChangeCapture[] = [];

  beforeAll(async () => {
    stack = await createTestStack();
    make = credentialFactory(stack);
  });
  afterAll(async () => {
    for (const capture of captures) await capture.stop();
    await stack?.close();
  });

  const confirmed = async (slot: string) =>
    (await sql<{ lsn: string }>`SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name = ${slot}`.execute(stack.db)).rows[0]?.lsn;
  const walNow = async () => (await sql<{ lsn: string }>`SELECT pg_current_wal_lsn()::text AS lsn`.execute(stack.db)).rows[0]!.lsn;
  const lsnAtLeast = async (a: string | undefined, b: string) => a !== undefined && (await sql<{ ok: boolean }>`SELECT ${a}::pg_lsn >= ${b}::pg_lsn AS ok`.execute(stack.db)).rows[0]!.ok;

  it('confirms the slot only after a batch was delivered; keeps at most the bound of one transaction\'s changes and names the table dropped', async () => {
    const owner = await make.user('owner');
    const team = await make.team(owner.id, 'Capture');
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => { release = resolve; });
    const batches: CapturedTransaction[] = [];
    const capture = new ChangeCapture(stack.databaseUrl, async (batch) => { batches.push(...batch); await gate; }, () => {}, { maxChangesPerTransaction: 2, maxQueuedTransactions: 10 });
    captures.push(capture);
    await capture.ready;

    await sql`INSERT INTO credit_transactions (id, team_id, amount_milli, reason) SELECT gen_random_uuid(), ${team.id}, g, 'operator_grant' FROM generate_series(1, 5) g`.execute(stack.db);
    const afterInsert = await walNow();
    await until(async () => batches.length === 1, 10_000, 'the transaction handed over', 20);
    expect(batches[0]!.changes.map((c) => [c.table, c.type, c.record?.amount_milli])).toEqual([['credit_transactions', 'INSERT', 1], ['credit_transactions', 'INSERT', 2]]);
    expect([...batches[0]!.dropped]).toEqual(['credit_transactions']);

    // Delivery has not finished: the slot is not confirmed up to that commit, whatever PostgreSQL asks meanwhile.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(await lsnAtLeast(await confirmed(capture.slotName), afterInsert)).toBe(false);
    release();
    await until(async () => lsnAtLeast(await confirmed(capture.slotName), afterInsert), 15_000, 'the slot confirmed past the delivered commit', 50);
  });

  it('authorizes a batch with one statement per relation and group of readers with the same teams, and shows each reader only its rows', async () => {
    const a = await make.user('a');
    const teamA = await make.team(a.id, 'A');
    const a2 = await make.user('a2');
    await addTeamMember(stack.db, { teamId: teamA.id, userId: a2.id, role: 'member' });
    const b = await make.user('b');
    const teamB = await make.team(b.id, 'B');
    const catalog = new RelationCatalog(stack.db);
    const subscriptions = new ChangeSubscriptions<JoinedChannel>();
    const frames = new Map<JoinedChannel, unknown[]>();
    const channelOf = async (userId: string | null) => {
      const bindings = validateBindings([{ event: '*', schema: 'public', table: 'credit_transactions' }], await catalog.columns());
      const identity = userId ? { role: 'authenticated' as const, userId, claims: { sub: userId } } : { role: 'anon' as const };
      const received: unknown[] = [];
      const channel = new JoinedChannel('realtime:t', 't', '1', '1.0.0', null, { selfBroadcast: false, ack: false, presenceKey: 'k', presenceEnabled: false }, bindings, identity as never, null, (data) => received.push(JSON.parse(String(data))));
      subscriptions.add(channel, bindings);
      frames.set(channel, received);
      return channel;
    };
    // Ten tabs of a, three of a2, two of b, two anonymous: four distinct readers, three groups (a and a2 read team A's rows).
    const tabs = { a: await Promise.all(Array.from({ length: 10 }, () => channelOf(a.id))), a2: await Promise.all(Array.from({ length: 3 }, () => channelOf(a2.id))), b: await Promise.all(Array.from({ length: 2 }, () => channelOf(b.id))), anon: await Promise.all(Array.from({ length: 2 }, () => channelOf(null))) };

    const batch: CapturedTransaction[] = [];
    const capture = new ChangeCapture(stack.databaseUrl, async (txs) => { batch.push(...txs); }, () => {});
    captures.push(capture);
    await capture.ready;
    await grantCredits(stack.db, { teamId: teamA.id, amountMilli: 1_000 });
    await grantCredits(stack.db, { teamId: teamB.id, amountMilli: 2_000 });
    await grantCredits(stack.db, { teamId: teamA.id, amountMilli: 3_000 });
    await until(async () => batch.filter((tx) => tx.changes.some((c) => c.table === 'credit_transactions')).length === 3, 10_000, 'three grants captured', 20);
    await capture.stop();

    const dispatcher = new ChangeDispatcher(stack.db, catalog, subscriptions);
    await dispatcher.dispatch(batch);
    await dispatcher.close();
    expect(dispatcher.counts.checks).toBe(3);
    const amounts = (channel: JoinedChannel) => (frames.get(channel) as Array<{ payload: { data: { table: string; record: { amount_milli: number } } } }>)
      .filter((f) => f.payload.data.table === 'credit_transactions').map((f) => f.payload.data.record.amount_milli);
    for (const channel of [...tabs.a, ...tabs.a2]) expect(amounts(channel)).toEqual([1_000, 3_000]);
    for (const channel of tabs.b) expect(amounts(channel)).toEqual([2_000]);
    for (const channel of tabs.anon) expect(amounts(channel)).toEqual([]);
  });

  it('a snapshot sees a transaction only once it left the running list and is below xmax', () => {
    expect(snapshotSees('100:110:', [99, 105])).toBe(true);
    expect(snapshotSees('100:110:105', [105])).toBe(false);
    expect(snapshotSees('100:110:', [110])).toBe(false);
    // Across the 32-bit wrap: xid8 4294967300 is xid 4.
    expect(snapshotSees('4294967290:4294967300:', [4294967295, 3])).toBe(true);
    expect(snapshotSees('4294967290:4294967300:', [4])).toBe(false);
  });
});
