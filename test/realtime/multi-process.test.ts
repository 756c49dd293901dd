import type { SupabaseClient } from '@supabase/supabase-js';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addTeamMember } from '../../shared/identity/service.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { anonKeyOf, RawSocket, sleep, socketUrl, statuses, supabaseFor, waitFor } from './clients.js';

// Two API processes on one database (as the compose deployment runs them): broadcast and presence
// reach members on either process, once each, through PostgreSQL LISTEN/NOTIFY (issue 37).
describe('realtime across two API processes', () => {
  let one: TestStack;
  let two: TestStack;
  let twoClosed = false;
  let make: ReturnType<typeof credentialFactory>;
  const origins: string[] = [];
  let anonKey: string;
  const clients: SupabaseClient[] = [];

  const clientOn = async (process: 0 | 1, jwt: string) => {
    const client = supabaseFor(origins[process]!, anonKey, () => jwt);
    await client.realtime.setAuth();
    clients.push(client);
    return client;
  };

  async function team() {
    const owner = await make.user('owner');
    const t = await make.team(owner.id, 'Two processes');
    const member = await make.user('member');
    await addTeamMember(one.db, { teamId: t.id, userId: member.id, role: 'member' });
    return { owner, member, team: t };
  }

  beforeAll(async () => {
    one = await createTestStack();
    // Same database and same data folder: the same anon key and IdP key, as two replicas share their secrets.
    two = await createTestStack({ DATA_DIR: one.config.DATA_DIR }, { databaseUrl: one.databaseUrl });
    make = credentialFactory(one);
    origins.push(await one.app.listen({ port: 0, host: '127.0.0.1' }), await two.app.listen({ port: 0, host: '127.0.0.1' }));
    anonKey = anonKeyOf(one);
    expect(anonKeyOf(two)).toBe(anonKey);
  });
  afterAll(async () => {
    for (const client of clients) await client.removeAllChannels();
    if (!twoClosed) await two?.close();
    await one?.close();
  });

  it('a broadcast from either process reaches the member on the other exactly once; self gets its own once', async () => {
    const { owner, member, team: t } = await team();
    const a = await clientOn(0, await make.jwt(owner.id));
    const b = await clientOn(1, await make.jwt(member.id));
    const got: { a: unknown[]; b: unknown[] } = { a: [], b: [] };
    const chA = a.channel(`team:${t.id}`, { config: { broadcast: { self: true } } }).on('broadcast', { event: 'm' }, (m) => got.a.push(m.payload));
    const chB = b.channel(`team:${t.id}`).on('broadcast', { event: 'm' }, (m) => got.b.push(m.payload));
    await statuses(chA).ready; await statuses(chB).ready;

    await chA.send({ type: 'broadcast', event: 'm', payload: { from: 'a', n: 1 } });
    await chB.send({ type: 'broadcast', event: 'm', payload: { from: 'b', n: 2 } });
    // A big payload crosses in NOTIFY chunks (a NOTIFY carries less than 8000 bytes).
    const big = 'x'.repeat(100_000);
    await chA.send({ type: 'broadcast', event: 'm', payload: { from: 'a', big } });
    await waitFor(() => got.b.length === 2 && got.a.length === 3, 'every copy');
    await sleep(500);
    // (the big payload compared by its length, so a failure does not print 100 kB)
    const shown = (list: unknown[]) => list.map((m) => ('big' in (m as object) ? { from: (m as { from: string }).from, bigLength: (m as { big: string }).big.length } : m));
    expect(shown(got.b)).toEqual([{ from: 'a', n: 1 }, { from: 'a', bigLength: 100_000 }]);
    // One sender's messages keep their order; a's own come at once, b's through the other process.
    expect(shown(got.a)).toHaveLength(3);
    expect(shown(got.a)).toEqual(expect.arrayContaining([{ from: 'a', n: 1 }, { from: 'b', n: 2 }, { from: 'a', bigLength: 100_000 }]));
    expect(shown(got.a).filter((m) => (m as { from: string }).from === 'a')).toEqual([{ from: 'a', n: 1 }, { from: 'a', bigLength: 100_000 }]);
  });

  it('presence tracked on one process is seen on the other; a late joiner gets the state of both', async () => {
    const { owner, member, team: t } = await team();
    const a = await clientOn(0, await make.jwt(owner.id));
    const b = await clientOn(1, await make.jwt(member.id));
    const chA = a.channel(`team:${t.id}`, { config: { presence: { key: 'a' } } }).on('presence', { event: 'sync' }, () => {});
    const chB = b.channel(`team:${t.id}`, { config: { presence: { key: 'b' } } }).on('presence', { event: 'sync' }, () => {});
    await statuses(chA).ready; await statuses(chB).ready;
    await chA.track({ on: 'one' });
    await chB.track({ on: 'two' });
    await waitFor(() => chA.presenceState().b && chB.presenceState().a, 'each sees the other');
    expect(chA.presenceState().b).toEqual([expect.objectContaining({ on: 'two' })]);
    expect(chB.presenceState().a).toEqual([expect.objectContaining({ on: 'one' })]);

    for (const process of [0, 1] as const) {
      const late = (await clientOn(process, await make.jwt(owner.id))).channel(`team:${t.id}`).on('presence', { event: 'sync' }, () => {});
      await statuses(late).ready;
      await waitFor(() => Object.keys(late.presenceState()).length === 2, `both in a late joiner's state on process ${process + 1}`);
      expect(Object.values(late.presenceState()).map((metas) => metas.length)).toEqual([1, 1]);
    }

    await chA.untrack();
    await waitFor(() => !chB.presenceState().a, 'untrack seen on the other process');
  });

  it('presence missed while the listening connections were cut is recovered when they come back', async () => {
    const { owner, member, team: t } = await team();
    const a = await clientOn(0, await make.jwt(owner.id));
    const b = await clientOn(1, await make.jwt(member.id));
    const chA = a.channel(`team:${t.id}`, { config: { presence: { key: 'a' } } }).on('presence', { event: 'sync' }, () => {});
    const chB = b.channel(`team:${t.id}`, { config: { presence: { key: 'b' } } }).on('presence', { event: 'sync' }, () => {});
    await statuses(chA).ready; await statuses(chB).ready;
    await chB.track({ v: 1 });
    await waitFor(() => chA.presenceState().b, 'b seen by a');
    const cut = await sql<{ n: number }>`select count(pg_terminate_backend(pid))::int as n from pg_stat_activity where datname = current_database() and query = 'LISTEN "realtime_bus"'`.execute(one.db);
    expect(cut.rows[0]!.n).toBe(2);
    // While nobody listens: a tracks, b re-tracks. Neither process hears the other's diff.
    await chA.track({ v: 1 });
    await chB.track({ v: 2 });
    await waitFor(() => chB.presenceState().a && (chA.presenceState().b?.[0] as { v?: number } | undefined)?.v === 2, 'both recovered after the reconnect', 8_000);
    await sleep(300);
    expect(chA.presenceState().b).toEqual([expect.objectContaining({ v: 2 })]);
    expect(chB.presenceState().b).toEqual([expect.objectContaining({ v: 2 })]);
    expect(chB.presenceState().a).toEqual([expect.objectContaining({ v: 1 })]);
  });

  it('when a process stops, its members\' presence leaves the other process (its sockets close with 1001)', async () => {
    const { owner, member, team: t } = await team();
    const a = await clientOn(0, await make.jwt(owner.id));
    const b = await clientOn(1, await make.jwt(member.id));
    const leaves: string[] = [];
    const chA = a.channel(`team:${t.id}`, { config: { presence: { key: 'a' } } }).on('presence', { event: 'leave' }, ({ key }) => leaves.push(key));
    const chB = b.channel(`team:${t.id}`, { config: { presence: { key: 'b' } } }).on('presence', { event: 'sync' }, () => {});
    await statuses(chA).ready; await statuses(chB).ready;
    await chB.track({ on: 'two' });
    await waitFor(() => chA.presenceState().b, 'b seen on process one');
    const raw = new RawSocket(socketUrl(origins[1]!, { apikey: anonKey, vsn: '2.0.0' }));
    await raw.opened;
    twoClosed = true;
    await two.close();
    b.realtime.disconnect();
    clients.splice(clients.indexOf(b), 1);
    await waitFor(() => !chA.presenceState().b, 'b gone from process one');
    expect(leaves).toEqual(['b']);
    await waitFor(() => raw.closed, 'the raw socket closed');
    expect(raw.closed).toEqual({ code: 1001, reason: 'server shutting down' });
  });
});
