import type { RealtimeChannel, SupabaseClient } from '@supabase/supabase-js';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { grantCredits } from '../../shared/billing/service.js';
import { exampleGraph } from '../../shared/documents/example-graph.js';
import { addTeamMember, createProject } from '../../shared/identity/service.js';
import { publishDirect } from '../harness/apps.js';
import { startRealtimeTestStack, type RealtimeTestStack } from '../harness/realtime.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { deleteTemporalSchedules } from '../schedules/helpers.js';
import { joinPayload, RawSocket, socketUrl, statuses, supabaseFor, waitFor } from './clients.js';

// Row changes from PostgreSQL's log, delivered with the unmodified supabase-js to the subscribers
// whose row-level security lets them read the row (issue 37, CONTRACTS "Realtime"). "Sees none" is
// proved by a later event owed to the same subscriber (commit order per relation), not by waiting.

type Change = { eventType: string; table: string; new: Record<string, unknown>; old: Record<string, unknown>; schema: string; commit_timestamp: string; errors: unknown };

describe('realtime postgres_changes', () => {
  let rt: RealtimeTestStack;
  let stack: TestStack;
  let two: TestStack;
  let twoOrigin: string;

  /** A channel listening to `table` (with an optional `eq` filter), SUBSCRIBED, and what it got. */
  async function listen(client: SupabaseClient, table: string, options: { filter?: string; event?: '*' | 'INSERT' | 'UPDATE' | 'DELETE' } = {}) {
    const got: Change[] = [];
    const channel: RealtimeChannel = client.channel(`changes-${Math.random().toString(36).slice(2)}`)
      .on('postgres_changes' as never, { event: options.event ?? '*', schema: 'public', table, ...(options.filter ? { filter: options.filter } : {}) } as never, (change: Change) => { got.push(change); });
    await statuses(channel).ready;
    return { channel, got };
  }

  async function tenant(label: string) {
    const owner = await rt.make.user(`${label}-owner`);
    const team = await rt.make.team(owner.id, label);
    const member = await rt.make.user(`${label}-member`);
    await addTeamMember(stack.db, { teamId: team.id, userId: member.id, role: 'member' });
    await grantCredits(stack.db, { teamId: team.id, amountMilli: 100_000 });
    const apiKey = (await rt.make.apiKey(team.id, owner.id)).token;
    return { owner, member, team, apiKey };
  }

  const clientOf = async (userId: string) => rt.client(await rt.make.jwt(userId));

  const startRun = async (apiKey: string, deploymentId: string) => {
    const res = await stack.app.inject({ method: 'POST', url: `/api/released-app/${deploymentId}/run`, headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, payload: JSON.stringify({ inputs: { name: 'Ada', n: 1 }, stream: false }) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().runId as string;
  };

  beforeAll(async () => {
    rt = await startRealtimeTestStack();
    stack = rt.stack;
    await stack.startWorker();
    // A second API process on the same database, as the compose deployment runs two.
    two = await createTestStack({ DATA_DIR: stack.config.DATA_DIR }, { databaseUrl: stack.databaseUrl });
    twoOrigin = await two.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterEach(() => rt.removeClients());
  afterAll(async () => {
    await deleteTemporalSchedules(stack).catch(() => {});
    await two?.close();
    await rt?.close();
  });

  it('a member sees the INSERT and UPDATEs of a run started through the HTTP API; a user of another team sees none', async () => {
    const a = await tenant('a');
    const b = await tenant('b');
    const member = await listen(await clientOf(a.member.id), 'runs');
    const outsider = await listen(await clientOf(b.member.id), 'runs');
    const appA = await publishDirect(stack.db, exampleGraph, { teamId: a.team.id, publishedBy: a.owner.id });
    const appB = await publishDirect(stack.db, exampleGraph, { teamId: b.team.id, publishedBy: b.owner.id });

    const runA = await startRun(a.apiKey, appA.deploymentId);
    await waitFor(() => member.got.some((c) => c.eventType === 'UPDATE' && c.new.status === 'completed'), 'the completed run seen by the member', 10_000);
    expect(member.got[0]).toMatchObject({ eventType: 'INSERT', schema: 'public', table: 'runs', new: { id: runA, team_id: a.team.id }, errors: null });
    expect(member.got.every((c) => c.new.id === runA)).toBe(true);
    expect(member.got.slice(1).every((c) => c.eventType === 'UPDATE' && c.old.id === runA)).toBe(true);
    expect(new Date(member.got[0]!.commit_timestamp).getTime()).toBeGreaterThan(Date.now() - 60_000);

    // The outsider's own team's run comes later in commit order: once it arrived, a's would have too.
    const runB = await startRun(b.apiKey, appB.deploymentId);
    await waitFor(() => outsider.got.some((c) => c.new.id === runB), 'the outsider\'s own run', 10_000);
    expect(outsider.got.filter((c) => c.new.id === runA)).toEqual([]);
    expect(outsider.got[0]).toMatchObject({ eventType: 'INSERT', new: { id: runB, team_id: b.team.id } });
    expect(member.got.filter((c) => c.new.id === runB)).toEqual([]);
  });

  it('a credits grant reaches the team\'s members as credit_transactions and credit_balances changes, not other teams', async () => {
    const a = await tenant('credits-a');
    const b = await tenant('credits-b');
    const client = await clientOf(a.member.id);
    const ledger = await listen(client, 'credit_transactions');
    const balance = await listen(client, 'credit_balances', { filter: `team_id=eq.${a.team.id}` });
    const outsider = await listen(await clientOf(b.owner.id), 'credit_transactions');
    const exact = await listen(client, 'credit_transactions', { filter: 'amount_milli=eq.5000' });

    await grantCredits(stack.db, { teamId: a.team.id, amountMilli: 7_000 }); // what `cli credits grant` runs
    await waitFor(() => ledger.got.length === 1 && balance.got.length === 1, 'the grant seen on both relations');
    expect(ledger.got[0]).toMatchObject({ eventType: 'INSERT', table: 'credit_transactions', new: { team_id: a.team.id, amount_milli: 7_000 } });
    expect(balance.got[0]).toMatchObject({ eventType: 'UPDATE', table: 'credit_balances', new: { team_id: a.team.id, balance_milli: 107_000 }, old: { team_id: a.team.id } });

    await grantCredits(stack.db, { teamId: b.team.id, amountMilli: 3_000 });
    await waitFor(() => outsider.got.length > 0, 'b\'s own grant');
    expect(outsider.got.map((c) => c.new.team_id)).toEqual([b.team.id]);
    expect(ledger.got).toHaveLength(1);

    // An eq filter on a number column: only the matching grant.
    await grantCredits(stack.db, { teamId: a.team.id, amountMilli: 5_000 });
    await waitFor(() => ledger.got.length === 2 && exact.got.length === 1, 'the 5,000 grant');
    expect(exact.got[0]).toMatchObject({ eventType: 'INSERT', new: { team_id: a.team.id, amount_milli: 5_000 } });
  });

  it('a schedule created through the HTTP API reaches members as project_schedules (the view), filtered by project', async () => {
    const a = await tenant('sched-a');
    const b = await tenant('sched-b');
    const appA = await publishDirect(stack.db, exampleGraph, { teamId: a.team.id, publishedBy: a.owner.id });
    const appB = await publishDirect(stack.db, exampleGraph, { teamId: b.team.id, publishedBy: b.owner.id });
    const projectOf = async (documentId: string) => (await stack.db.selectFrom('documents').select('project_id').where('id', '=', documentId).executeTakeFirstOrThrow()).project_id;
    const [projectA, projectB] = [await projectOf(appA.documentId), await projectOf(appB.documentId)];
    const member = await listen(await clientOf(a.member.id), 'project_schedules', { filter: `project_id=eq.${projectA}` });
    const outsider = await listen(await clientOf(b.member.id), 'project_schedules');

    const create = async (projectId: string, userId: string) => {
      const res = await stack.app.inject({ method: 'POST', url: `/projects/${projectId}/schedules`, headers: { authorization: `Bearer ${await rt.make.jwt(userId)}`, 'content-type': 'application/json' }, payload: JSON.stringify({ name: 'nightly', cron_expression: '0 3 * * *' }) });
      expect(res.statusCode, res.body).toBe(201);
      return (res.json() as { id?: string; schedule?: { id: string } }).id ?? (res.json() as { schedule: { id: string } }).schedule.id;
    };
    const scheduleA = await create(projectA, a.owner.id);
    await waitFor(() => member.got.length > 0, 'the schedule seen by the member');
    expect(member.got[0]).toMatchObject({ eventType: 'INSERT', table: 'project_schedules', new: { id: scheduleA, project_id: projectA, name: 'nightly', cron_expression: '0 3 * * *' } });

    const scheduleB = await create(projectB, b.owner.id);
    await waitFor(() => outsider.got.some((c) => c.new.id === scheduleB), 'b\'s own schedule');
    expect(outsider.got.filter((c) => c.new.id === scheduleA)).toEqual([]);
  });

  it('romp messages reach the two parties of the binding only', async () => {
    const a = await tenant('romp-a');
    const b = await tenant('romp-b');
    const bindingA = await rt.make.agentToken(a.team.id, a.member.id, []);
    const bindingB = await rt.make.agentToken(b.team.id, b.member.id, []);
    const owner = await listen(await clientOf(a.member.id), 'romp_messages');
    const agent = await listen(await clientOf(bindingA.agentUserId), 'romp_messages');
    const teammate = await listen(await clientOf(a.owner.id), 'romp_messages'); // same team, not a party
    const third = await listen(await clientOf(b.member.id), 'romp_messages');

    const post = async (bindingId: string, sender: string, body: string) =>
      (await sql<{ id: string }>`INSERT INTO romp_messages (binding_id, sender_user_id, body) VALUES (${bindingId}, ${sender}, ${body}) RETURNING id`.execute(stack.db)).rows[0]!.id;
    const hello = await post(bindingA.bindingId, a.member.id, 'hello agent');
    await waitFor(() => owner.got.length === 1 && agent.got.length === 1, 'both parties');
    expect(agent.got[0]).toMatchObject({ eventType: 'INSERT', new: { id: hello, body: 'hello agent', sender_user_id: a.member.id } });

    // Later events owed to the others: a's owner and b's member each get their own binding's message only.
    const own = await rt.make.agentToken(a.team.id, a.owner.id, []);
    const mine = await post(own.bindingId, a.owner.id, 'owner to own agent');
    const theirs = await post(bindingB.bindingId, b.member.id, 'b to b agent');
    await waitFor(() => teammate.got.length > 0 && third.got.length > 0, 'their own messages');
    expect(teammate.got.map((c) => c.new.id)).toEqual([mine]);
    expect(third.got.map((c) => c.new.id)).toEqual([theirs]);
    expect(owner.got.map((c) => c.new.id)).toEqual([hello]);
  });

  it('eq filters on any column; a DELETE carries the primary key only, to readers the row was shown to', async () => {
    const a = await tenant('filter-a');
    const b = await tenant('filter-b');
    const project = (await createProject(stack.db, { teamId: a.team.id, name: 'P' })).id;
    const client = await clientOf(a.member.id);
    const drafts = await listen(client, 'assets_sessions', { filter: 'status=eq.archived' });
    const all = await listen(client, 'assets_sessions');
    const deletes = await listen(client, 'assets_sessions', { event: 'DELETE' });
    const outsider = await listen(await clientOf(b.member.id), 'assets_sessions');

    const session = (await sql<{ id: string; status: string }>`INSERT INTO assets_sessions (team_id, project_id, created_by) VALUES (${a.team.id}, ${project}, ${a.member.id}) RETURNING id, status`.execute(stack.db)).rows[0]!;
    expect(session.status).not.toBe('archived');
    // Each step once the previous was delivered: a change is checked when it is delivered, against
    // the row as it is then (a row already deleted cannot be shown, docs/realtime.md).
    await waitFor(() => all.got.length === 1, 'the insert');
    await sql`UPDATE assets_sessions SET status = 'archived' WHERE id = ${session.id}`.execute(stack.db);
    await waitFor(() => all.got.length === 2, 'the update');
    await sql`DELETE FROM assets_sessions WHERE id = ${session.id}`.execute(stack.db);
    await waitFor(() => deletes.got.length === 1, 'the delete');
    expect(all.got.map((c) => c.eventType)).toEqual(['INSERT', 'UPDATE', 'DELETE']);
    expect(drafts.got.map((c) => [c.eventType, c.new.status])).toEqual([['UPDATE', 'archived']]);
    expect(deletes.got[0]).toMatchObject({ eventType: 'DELETE', old: { id: session.id }, new: {} });
    expect(Object.keys(deletes.got[0]!.old)).toEqual(['id']);

    const projectB = (await createProject(stack.db, { teamId: b.team.id, name: 'P' })).id;
    const theirs = (await sql<{ id: string }>`INSERT INTO assets_sessions (team_id, project_id, created_by) VALUES (${b.team.id}, ${projectB}, ${b.member.id}) RETURNING id`.execute(stack.db)).rows[0]!.id;
    await waitFor(() => outsider.got.length > 0, 'b\'s own session');
    expect(outsider.got.map((c) => [c.eventType, c.new.id])).toEqual([['INSERT', theirs]]);
  });

  it('a client that stops reading is disconnected once 4 MiB wait for it; the others get every change and the slot moves on', async () => {
    const a = await tenant('slow');
    const project = (await createProject(stack.db, { teamId: a.team.id, name: 'P' })).id;
    const doc = (await sql<{ id: string }>`INSERT INTO documents (id, project_id, name, graph) VALUES (gen_random_uuid(), ${project}, 'v0', '{}') RETURNING id`.execute(stack.db)).rows[0]!.id;
    const reader = await listen(await clientOf(a.member.id), 'documents', { filter: `id=eq.${doc}` });
    const slow = new RawSocket(socketUrl(rt.origin, { apikey: rt.anonKey, vsn: '2.0.0' }));
    await slow.opened;
    const ref = slow.join('realtime:slow', joinPayload({ token: await rt.make.jwt(a.owner.id), postgresChanges: [{ event: '*', schema: 'public', table: 'documents', filter: `id=eq.${doc}` }] }));
    expect((await slow.replyTo(ref))?.payload).toMatchObject({ status: 'ok' });
    (slow.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause();

    // 60 updates carrying 200 KB each: 12 MB owed to a client that reads nothing.
    const pad = 'x'.repeat(200 * 1024);
    for (let i = 1; i <= 60; i++) await sql`UPDATE documents SET name = ${`v${i}`}, graph = ${JSON.stringify({ pad, i })}::jsonb WHERE id = ${doc}`.execute(stack.db);
    // Then log the slots read past with nothing to deliver (a table outside the publication, as other
    // databases' writes are): PostgreSQL asks for no status for 30 s, so only answering its unasked
    // keepalive confirms it in time.
    await sql`CREATE TABLE unpublished_filler AS SELECT 1 AS n`.execute(stack.db);
    const last = (await sql<{ lsn: string }>`SELECT pg_current_wal_lsn()::text AS lsn`.execute(stack.db)).rows[0]!.lsn;
    await waitFor(() => reader.got.length === 60, 'every update at the reading client', 30_000);
    expect(reader.got.map((c) => c.new.name)).toEqual(Array.from({ length: 60 }, (_, i) => `v${i + 1}`));
    (slow.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    await waitFor(() => slow.closed, 'the slow client disconnected', 10_000);
    expect(slow.closed).toEqual({ code: 1008, reason: 'client too slow' });
    await waitFor(async () => (await sql<{ ok: boolean }>`SELECT bool_and(confirmed_flush_lsn >= ${last}::pg_lsn) AS ok FROM pg_replication_slots WHERE database = current_database()`.execute(stack.db)).rows[0]?.ok, 'the slots confirmed past the updates', 15_000);
  });

  it('two API processes: each subscriber gets every change it is owed once, whichever process it is on', async () => {
    const a = await tenant('two-a');
    const jwt = await rt.make.jwt(a.member.id);
    const onTwo = supabaseFor(twoOrigin, rt.anonKey, () => jwt);
    await onTwo.realtime.setAuth();
    rt.track(onTwo);
    const first = await listen(await clientOf(a.member.id), 'credit_transactions');
    const second = await listen(onTwo, 'credit_transactions');
    for (const amount of [1_000, 2_000, 3_000]) await grantCredits(stack.db, { teamId: a.team.id, amountMilli: amount });
    await waitFor(() => first.got.length >= 3 && second.got.length >= 3, 'three grants on both processes');
    await new Promise((r) => setTimeout(r, 300));
    for (const listener of [first, second]) expect(listener.got.map((c) => c.new.amount_milli)).toEqual([1_000, 2_000, 3_000]);
  });
});
