import { randomUUID } from 'node:crypto';
import type { SupabaseClient } from '@supabase/supabase-js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { addTeamMember, createProject } from '../../shared/identity/service.js';
import { startRealtimeTestStack, type RealtimeTestStack } from '../harness/realtime.js';
import type { TestStack } from '../harness/stack.js';
import { sleep, subscribed, supabaseFor, waitFor } from './clients.js';

// Broadcast and presence between two members with the real supabase-js 2.109.0 (issue 37), and
// everybody else refused a join on a member topic.
describe('realtime broadcast and presence (supabase-js)', () => {
  let stack: TestStack;
  let make: RealtimeTestStack['make'];
  let origin: string;
  let anonKey: string;
  const clients: SupabaseClient[] = [];

  const clientAs = (jwt: string | null) => {
    const client = supabaseFor(origin, anonKey, () => jwt);
    clients.push(client);
    return client;
  };

  /** An owner and a member of one team, each with a signed-in client. */
  async function twoMembers() {
    const owner = await make.user('owner');
    const team = await make.team(owner.id, 'Realtime');
    const member = await make.user('member');
    await addTeamMember(stack.db, { teamId: team.id, userId: member.id, role: 'member' });
    return { owner, team, member, a: clientAs(await make.jwt(owner.id)), b: clientAs(await make.jwt(member.id)) };
  }

  beforeAll(async () => {
    ({ stack, make, origin, anonKey } = await startRealtimeTestStack());
  });
  afterEach(async () => {
    for (const client of clients.splice(0)) await client.removeAllChannels();
  });
  afterAll(() => stack?.close());

  it('a broadcast on team:<id> reaches the other member once, not the sender (self off), with ack', async () => {
    const { team, a, b } = await twoMembers();
    const got: { a: unknown[]; b: unknown[] } = { a: [], b: [] };
    const chA = a.channel(`team:${team.id}`, { config: { broadcast: { ack: true } } }).on('broadcast', { event: 'cursor' }, (m) => got.a.push(m));
    const chB = b.channel(`team:${team.id}`).on('broadcast', { event: 'cursor' }, (m) => got.b.push(m));
    expect((await subscribed(chA)).status).toBe('SUBSCRIBED');
    expect((await subscribed(chB)).status).toBe('SUBSCRIBED');

    expect(await chA.send({ type: 'broadcast', event: 'cursor', payload: { x: 1, y: 2 } })).toBe('ok');
    await waitFor(() => got.b.length === 1, 'the broadcast at b');
    await sleep(200);
    expect(got.b).toEqual([{ type: 'broadcast', event: 'cursor', payload: { x: 1, y: 2 } }]);
    expect(got.a).toEqual([]);
  });

  it('with self on the sender gets its own broadcast too; other events do not reach a binding for one event', async () => {
    const { team, a, b } = await twoMembers();
    const got: { a: unknown[]; b: unknown[] } = { a: [], b: [] };
    const chA = a.channel(`team:${team.id}`, { config: { broadcast: { self: true } } }).on('broadcast', { event: 'note' }, (m) => got.a.push(m.payload));
    const chB = b.channel(`team:${team.id}`).on('broadcast', { event: 'note' }, (m) => got.b.push(m.payload));
    await subscribed(chA); await subscribed(chB);
    await chA.send({ type: 'broadcast', event: 'other', payload: { n: 0 } });
    await chA.send({ type: 'broadcast', event: 'note', payload: { n: 1, text: 'héllo ✓' } });
    await waitFor(() => got.a.length === 1 && got.b.length === 1, 'both copies');
    expect(got).toEqual({ a: [{ n: 1, text: 'héllo ✓' }], b: [{ n: 1, text: 'héllo ✓' }] });
  });

  it('presence: track shows up at the other member (sync, join), untrack and leaving remove it', async () => {
    const { owner, team, member, a, b } = await twoMembers();
    const joins: string[] = [];
    const leaves: string[] = [];
    const chA = a.channel(`team:${team.id}`, { config: { presence: { key: owner.id } } }).on('presence', { event: 'sync' }, () => {});
    const chB = b.channel(`team:${team.id}`, { config: { presence: { key: member.id } } })
      .on('presence', { event: 'join' }, ({ key }) => joins.push(key))
      .on('presence', { event: 'leave' }, ({ key }) => leaves.push(key));
    await subscribed(chA); await subscribed(chB);
    expect(await chA.track({ status: 'online' })).toBe('ok');
    await waitFor(() => chB.presenceState()[owner.id], 'a in b\'s presence');
    expect(chB.presenceState()[owner.id]).toEqual([expect.objectContaining({ status: 'online', presence_ref: expect.any(String) })]);
    expect(joins).toEqual([owner.id]);
    // Tracking again replaces the meta (the other member never holds both).
    await chA.track({ status: 'busy' });
    await waitFor(() => chB.presenceState()[owner.id]?.some((m) => (m as { status?: string }).status === 'busy'), 'the new meta');
    await sleep(200);
    expect(chB.presenceState()[owner.id]).toEqual([expect.objectContaining({ status: 'busy' })]);

    // b tracks too; a late joiner (a second client of the owner) gets both in its first presence_state
    await chB.track({ status: 'away' });
    const late = clientAs(await make.jwt(owner.id)).channel(`team:${team.id}`).on('presence', { event: 'sync' }, () => {});
    await subscribed(late);
    await waitFor(() => Object.keys(late.presenceState()).length === 2, 'both in the late joiner\'s state');
    expect(Object.keys(late.presenceState()).sort()).toEqual([owner.id, member.id].sort());

    await chA.untrack();
    await waitFor(() => !chB.presenceState()[owner.id], 'a gone after untrack');
    expect(leaves).toEqual([owner.id, owner.id]);
    await chA.track({ status: 'back' });
    await waitFor(() => chB.presenceState()[owner.id], 'a back');
    await a.removeChannel(chA);
    await waitFor(() => !chB.presenceState()[owner.id], 'a gone after leaving');
    expect(leaves).toEqual([owner.id, owner.id, owner.id]);
  });

  it('supabase-js with vsn 1.0.0 (JSON objects) talks to a vsn 2.0.0 member both ways', async () => {
    const { owner, team, member } = await twoMembers();
    const v1 = supabaseFor(origin, anonKey, () => null, { vsn: '1.0.0' });
    clients.push(v1);
    await v1.realtime.setAuth(await make.jwt(owner.id));
    const v2 = clientAs(await make.jwt(member.id));
    const got: { v1: unknown[]; v2: unknown[] } = { v1: [], v2: [] };
    const ch1 = v1.channel(`team:${team.id}`).on('broadcast', { event: 'm' }, (m) => got.v1.push(m.payload)).on('presence', { event: 'sync' }, () => {});
    const ch2 = v2.channel(`team:${team.id}`).on('broadcast', { event: 'm' }, (m) => got.v2.push(m.payload)).on('presence', { event: 'sync' }, () => {});
    expect((await subscribed(ch1)).status).toBe('SUBSCRIBED');
    expect((await subscribed(ch2)).status).toBe('SUBSCRIBED');
    await ch1.send({ type: 'broadcast', event: 'm', payload: { from: 'v1' } });
    await ch2.send({ type: 'broadcast', event: 'm', payload: { from: 'v2' } });
    await ch1.track({ vsn: 1 });
    await waitFor(() => got.v1.length === 1 && got.v2.length === 1 && Object.keys(ch2.presenceState()).length === 1, 'both ways');
    expect(got).toEqual({ v1: [{ from: 'v2' }], v2: [{ from: 'v1' }] });
    expect(Object.values(ch2.presenceState())[0]).toEqual([expect.objectContaining({ vsn: 1 })]);
  });

  it('project:<id> and document:<id> are member topics of the project\'s team', async () => {
    const { owner, team, a, b } = await twoMembers();
    const project = await createProject(stack.db, { teamId: team.id, name: 'P', createdBy: owner.id });
    const got: unknown[] = [];
    const chA = a.channel(`project:${project.id}`);
    const chB = b.channel(`project:${project.id}`).on('broadcast', { event: 'e' }, (m) => got.push(m.payload));
    expect((await subscribed(chA)).status).toBe('SUBSCRIBED');
    expect((await subscribed(chB)).status).toBe('SUBSCRIBED');
    await chA.send({ type: 'broadcast', event: 'e', payload: { p: true } });
    await waitFor(() => got.length === 1, 'project broadcast');
    const stranger = clientAs(await make.jwt((await make.user('stranger')).id));
    const refused = await subscribed(stranger.channel(`project:${project.id}`));
    expect(refused.status).toBe('CHANNEL_ERROR');
    const missingDocument = await subscribed(b.channel(`document:${randomUUID()}`));
    expect(missingDocument.status).toBe('CHANNEL_ERROR');
  });

  it('an outsider, the anon role and a removed member are refused on team:<id>, and see nothing of its traffic', async () => {
    const { team, member, a, b } = await twoMembers();
    const stranger = await make.user('stranger');
    const outsider = clientAs(await make.jwt(stranger.id));
    const anon = clientAs(null);
    const seen: unknown[] = [];
    const systemMessages: unknown[] = [];
    const chOut = outsider.channel(`team:${team.id}`).on('broadcast', { event: '*' }, (m) => seen.push(m)).on('system', {}, (m) => systemMessages.push(m));
    const refused = await subscribed(chOut);
    expect(refused.status).toBe('CHANNEL_ERROR');
    expect(refused.error?.message).toBe(`Unauthorized: You do not have permissions to read from this Channel topic: team:${team.id}`);
    await waitFor(() => systemMessages.length >= 1, 'the system message');
    expect(systemMessages[0]).toEqual({ extension: 'system', status: 'error', message: refused.error?.message, channel: `team:${team.id}` });
    const anonRefused = await subscribed(anon.channel(`team:${team.id}`));
    expect(anonRefused.status).toBe('CHANNEL_ERROR');

    await stack.db.deleteFrom('team_members').where('team_id', '=', team.id).where('user_id', '=', member.id).execute();
    expect((await subscribed(b.channel(`team:${team.id}`))).status).toBe('CHANNEL_ERROR');

    const chA = a.channel(`team:${team.id}`);
    await subscribed(chA);
    await chA.send({ type: 'broadcast', event: 'secret', payload: { s: 1 } });
    await sleep(300);
    expect(seen).toEqual([]);
  });
});
