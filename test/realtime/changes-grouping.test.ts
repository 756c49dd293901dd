import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addTeamMember } from '../../shared/identity/service.js';
import { authorizeBatch, tupleId, type Reader } from '../../shared/realtime/changes/authorization-repository.js';
import { ChangeDispatcher, observeBatches, type BatchTiming } from '../../shared/realtime/changes/dispatcher.js';
import { encodeChangeFrame } from '../../shared/realtime/changes/frames.js';
import { loadPolicyCatalog, type PolicyCatalog } from '../../shared/realtime/changes/policy-repository.js';
import { analyzeReaderDependence } from '../../shared/realtime/changes/reader-dependence.js';
import { ReaderValueCache } from '../../shared/realtime/changes/reader-values.js';
import { REALTIME_RELATIONS, RelationCatalog } from '../../shared/realtime/relations.js';
import { encodeFrame } from '../../shared/realtime/serializer.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { channelsOn, startCapture } from './changes-fixtures.js';

// Authorization of row changes grouped by what the policies read of the reader (docs/realtime.md
// "Authorization, grouped"): one check answers every reader with the same values of the reader
// functions a relation's policies call, only where the catalog proves it; per reader otherwise.
describe('realtime change authorization, grouped', () => {
  let stack: TestStack;
  let make: ReturnType<typeof credentialFactory>;
  let catalog: RelationCatalog;
  const stops: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    stack = await createTestStack();
    make = credentialFactory(stack);
    catalog = new RelationCatalog(stack.db);
  });
  afterAll(async () => {
    for (const stop of stops) await stop();
    await stack?.close();
  });

  /** A credit transaction of `teamId`, committed; its id. */
  const insertRow = async (teamId: string, options: { reason?: string; createdBy?: string } = {}) =>
    (await sql<{ id: string }>`INSERT INTO credit_transactions (id, team_id, amount_milli, reason, created_by) VALUES (gen_random_uuid(), ${teamId}, 1, ${options.reason ?? 'operator_grant'}, ${options.createdBy ?? null}) RETURNING id::text`.execute(stack.db)).rows[0]!.id;

  async function teamOf(label: string, members: number) {
    const owner = await make.user(`${label}-owner`);
    const team = await make.team(owner.id, label);
    const users = [owner];
    for (let i = 1; i < members; i++) {
      const user = await make.user(`${label}-${i}`);
      await addTeamMember(stack.db, { teamId: team.id, userId: user.id, role: 'member' });
      users.push(user);
    }
    return { team, users };
  }

  async function dispatcherWithCapture(channels: ReturnType<typeof channelsOn>) {
    const dispatcher = new ChangeDispatcher(stack.db, catalog, channels.subscriptions);
    const capture = await startCapture(stack);
    stops.push(async () => { await capture.capture.stop(); await dispatcher.close(); });
    return { dispatcher, take: capture.take };
  }

  const dependenceOf = (policyCatalog: PolicyCatalog, relation: string) => {
    const dependence = analyzeReaderDependence(policyCatalog, REALTIME_RELATIONS).dependence.get(relation)!;
    return dependence.kind === 'functions' ? dependence.functions.map((f) => f.name) : dependence.why;
  };

  it('derives from the policies which relations one check answers per team set, per project set, for everyone, or per reader', async () => {
    const policyCatalog = await loadPolicyCatalog(stack.db);
    const { dependence } = analyzeReaderDependence(policyCatalog, REALTIME_RELATIONS);
    for (const relation of ['credit_transactions', 'runs', 'team_members', 'project_schedules', 'payment_orders']) {
      expect(dependenceOf(policyCatalog, relation), relation).toEqual(['access_reader_team_ids']);
    }
    expect(dependenceOf(policyCatalog, 'documents')).toEqual(['access_reader_project_ids']);
    expect(dependenceOf(policyCatalog, 'romp_messages')).toEqual(['access_binding_ids']);
    expect(dependenceOf(policyCatalog, 'billing_rules')).toEqual([]);
    // `user_id = auth.uid()` compares the reader itself with a column: no two readers share an answer.
    expect(dependenceOf(policyCatalog, 'grants')).toMatch(/policy "the user reads" on oauth_grants: reads auth\.\*/);
    const teamIds = dependence.get('credit_transactions');
    expect(teamIds?.kind === 'functions' && teamIds.functions[0]!.tables.map((t) => t.name).sort()).toEqual(['agents', 'team_members', 'teams']);
    expect(teamIds?.kind === 'functions' && teamIds.functions[0]!.cacheable).toBe(true);
  });

  it('trusts a function of the reader only when the catalog proves it reads nothing but its argument and tables', async () => {
    const real = await loadPolicyCatalog(stack.db);
    const altered = (change: (c: PolicyCatalog) => void) => {
      const copy = structuredClone(real);
      change(copy);
      return dependenceOf(copy, 'credit_transactions');
    };
    const fn = (c: PolicyCatalog, name: string) => c.functions.find((f) => f.name === name && f.schema === 'public')!;
    expect(altered(() => {})).toEqual(['access_reader_team_ids']);
    expect(altered((c) => { fn(c, 'access_reader_team_ids').securityDefiner = false; })).toMatch(/not SECURITY DEFINER/);
    expect(altered((c) => { fn(c, 'access_member_team_ids').source += " AND current_setting('request.jwt.claims', true) IS NOT NULL"; })).toMatch(/access_member_team_ids reads current_setting/);
    expect(altered((c) => { fn(c, 'access_member_team_ids').settings = []; })).toMatch(/does not set search_path/);
    expect(altered((c) => { c.relations.find((r) => r.name === 'team_members')!.forceRowSecurity = true; })).toMatch(/reads team_members under row-level security/);
    expect(altered((c) => { fn(c, 'access_reader_team_ids').language = 'plpgsql'; })).toMatch(/written in plpgsql/);
    // A clock in the body: still grouped per batch, never kept between batches.
    const clocked = structuredClone(real);
    fn(clocked, 'access_member_team_ids').source += ' AND now() IS NOT NULL';
    const teamIds = analyzeReaderDependence(clocked, REALTIME_RELATIONS).dependence.get('credit_transactions');
    expect(teamIds?.kind === 'functions' && teamIds.functions[0]!.cacheable).toBe(false);
    // A view that does not run as its invoker reads with its owner's rights, not the reader's policies.
    const view = structuredClone(real);
    view.relations.find((r) => r.name === 'project_schedules')!.options = [];
    expect(dependenceOf(view, 'project_schedules')).toMatch(/does not run as its invoker/);
  });

  it('a relation whose policy reads more than the team set is checked per reader: two members of one team see different rows', async () => {
    const a = await teamOf('private-a', 2);
    const b = await teamOf('private-b', 1);
    const [alice, ada] = [a.users[0]!, a.users[1]!];
    const channels = channelsOn(catalog);
    const aliceTabs = [await channels.channel(alice.id, 'credit_transactions'), await channels.channel(alice.id, 'credit_transactions')];
    const adaTab = await channels.channel(ada.id, 'credit_transactions');
    const bobTab = await channels.channel(b.users[0]!.id, 'credit_transactions');
    const { dispatcher, take } = await dispatcherWithCapture(channels);

    // Team policy only: one check per team.
    const shared = await insertRow(a.team.id);
    await dispatcher.dispatch(await take(1, 'credit_transactions'));
    expect(dispatcher.counts.checks).toBe(2);

    // Now a restrictive policy that also reads the reader itself: a "private" row only for its author.
    await sql.raw(`CREATE POLICY "authors read private rows" ON credit_transactions AS RESTRICTIVE FOR SELECT TO authenticated USING (reason <> 'private' OR created_by = (SELECT auth.uid()))`).execute(stack.db);
    try {
      const mine = await insertRow(a.team.id, { reason: 'private', createdBy: alice.id });
      const open = await insertRow(a.team.id);
      // The analysis was made before the policy: the batch sees the catalog changed and checks per reader.
      await dispatcher.dispatch(await take(2, 'credit_transactions'));
      expect(dispatcher.counts.checks).toBe(2 + 3);
      const later = await insertRow(a.team.id, { reason: 'private', createdBy: ada.id });
      await dispatcher.dispatch(await take(1, 'credit_transactions'));
      expect(dispatcher.counts.checks).toBe(2 + 3 + 3);
      expect(dependenceOf(await loadPolicyCatalog(stack.db), 'credit_transactions')).toMatch(/"authors read private rows" on credit_transactions: reads auth\.\*/);

      for (const tab of aliceTabs) expect(channels.seen(tab, 'credit_transactions')).toEqual([shared, mine, open]);
      expect(channels.seen(adaTab, 'credit_transactions')).toEqual([shared, open, later]);
      expect(channels.seen(bobTab, 'credit_transactions')).toEqual([]);
    } finally {
      await sql.raw(`DROP POLICY "authors read private rows" ON credit_transactions`).execute(stack.db);
    }
  });

  it('a batch\'s checks go out in one round trip, each answered for its own reader', async () => {
    const teams = [await teamOf('trip-a', 2), await teamOf('trip-b', 1), await teamOf('trip-c', 1)];
    // One user in two teams.
    await addTeamMember(stack.db, { teamId: teams[2]!.team.id, userId: teams[1]!.users[0]!.id, role: 'member' });
    const rows = await Promise.all(teams.map((t) => insertRow(t.team.id)));
    const readers = new Map<string, Reader>([
      ...teams.flatMap((t) => t.users).map((u) => [`u:${u.id}`, { role: 'authenticated', sub: u.id }] as const),
      ['anon', { role: 'anon', sub: null }],
    ]);
    const client = new pg.Client({ connectionString: stack.databaseUrl });
    await client.connect();
    try {
      let roundTrips = 0;
      const query = client.query.bind(client);
      client.query = ((...args: Parameters<typeof client.query>) => { roundTrips++; return query(...args); }) as typeof client.query;
      const key = [{ name: 'id', type: 'uuid' }];
      const result = await authorizeBatch(client, [{ relation: 'credit_transactions', key, keys: rows.map((id) => [id]), readers, dependence: { kind: 'reader', why: 'test' } }], [], { stamp: null, values: new ReaderValueCache() });
      expect(result.checks).toBe(5);
      expect(roundTrips).toBe(2); // the snapshot, then every settings + check pair and the commit
      const seen = (userId: string) => [...(result.readable('credit_transactions').get(`u:${userId}`) ?? [])].sort();
      expect(seen(teams[0]!.users[0]!.id)).toEqual([tupleId([rows[0]])]);
      expect(seen(teams[0]!.users[1]!.id)).toEqual([tupleId([rows[0]])]);
      expect(seen(teams[1]!.users[0]!.id)).toEqual([tupleId([rows[1]]), tupleId([rows[2]])].sort());
      expect(seen(teams[2]!.users[0]!.id)).toEqual([tupleId([rows[2]])]);
      expect([...(result.readable('credit_transactions').get('anon') ?? [])]).toEqual([]);
    } finally {
      await client.end();
    }
  });

  it('a member removed from a team, or whose team is deleted, stops receiving at the next batch; values are kept only while their tables are unchanged', async () => {
    const a = await teamOf('leave-a', 3);
    const b = await teamOf('leave-b', 2);
    const channels = channelsOn(catalog);
    const tabs = new Map([...a.users, ...b.users].map((u) => [u.id, null as unknown as Awaited<ReturnType<typeof channels.channel>>]));
    for (const id of tabs.keys()) tabs.set(id, await channels.channel(id, 'credit_transactions'));
    const { dispatcher, take } = await dispatcherWithCapture(channels);
    const timings: BatchTiming[] = [];
    observeBatches((timing) => timings.push(timing));
    try {
      const first = await insertRow(a.team.id);
      const ofB = await insertRow(b.team.id);
      await dispatcher.dispatch(await take(2, 'credit_transactions'));
      const second = await insertRow(a.team.id);
      await dispatcher.dispatch(await take(1, 'credit_transactions'));
      // Five readers' values computed once, then kept: the tables they come from did not change.
      expect(timings.map((t) => [t.checks, t.computedValues])).toEqual([[2, 5], [2, 0]]);

      const leaver = a.users[2]!;
      await sql`DELETE FROM team_members WHERE team_id = ${a.team.id} AND user_id = ${leaver.id}`.execute(stack.db);
      const third = await insertRow(a.team.id);
      await dispatcher.dispatch(await take(1, 'credit_transactions'));
      for (const user of a.users.slice(0, 2)) expect(channels.seen(tabs.get(user.id)!, 'credit_transactions')).toEqual([first, second, third]);
      expect(channels.seen(tabs.get(leaver.id)!, 'credit_transactions')).toEqual([first, second]);
      expect(timings[2]!.computedValues).toBe(5);

      // `teams` is not in the publication: the log says nothing of a deleted team, its content does.
      await sql`UPDATE teams SET deleted_at = now() WHERE id = ${b.team.id}`.execute(stack.db);
      await insertRow(b.team.id);
      const fifth = await insertRow(a.team.id);
      await dispatcher.dispatch(await take(2, 'credit_transactions'));
      for (const user of b.users) expect(channels.seen(tabs.get(user.id)!, 'credit_transactions')).toEqual([ofB]);
      for (const user of a.users.slice(0, 2)) expect(channels.seen(tabs.get(user.id)!, 'credit_transactions')).toEqual([first, second, third, fifth]);
      expect(channels.seen(tabs.get(leaver.id)!, 'credit_transactions')).toEqual([first, second]);
    } finally {
      observeBatches(null);
    }
  });

  it('encodes a change once and frames it per channel exactly as the serializer would', () => {
    const data = { schema: 'public', table: 'runs', type: 'INSERT', record: { id: 'x', note: 'a "quoted" \\ value' }, errors: null };
    for (const vsn of ['1.0.0', '2.0.0'] as const) {
      for (const joinRef of ['3', null]) {
        expect(encodeChangeFrame(vsn, joinRef, 'realtime:some "topic"', [7, 8], JSON.stringify(data))).toBe(encodeFrame(vsn, joinRef, null, 'realtime:some "topic"', 'postgres_changes', { ids: [7, 8], data }));
      }
    }
  });
});
