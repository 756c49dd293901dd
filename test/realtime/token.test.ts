import type { SupabaseClient } from '@supabase/supabase-js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { addTeamMember } from '../../shared/identity/service.js';
import { startRealtimeTestStack, type RealtimeTestStack } from '../harness/realtime.js';
import type { TestStack } from '../harness/stack.js';
import { RawSocket, sleep, socketUrl, statuses, supabaseFor, waitFor } from './clients.js';

// A channel lives as long as its JWT: it is closed with a `system` error when the token expires,
// and a refreshed token (an `access_token` push) keeps it (issue 37, CONTRACTS "Keys and identity").
describe('realtime and the JWT of a channel', () => {
  let stack: TestStack;
  let make: RealtimeTestStack['make'];
  let origin: string;
  let anonKey: string;
  const clients: SupabaseClient[] = [];

  async function memberTeam() {
    const owner = await make.user('owner');
    const team = await make.team(owner.id, 'Tokens');
    return { owner, team };
  }

  beforeAll(async () => {
    ({ stack, make, origin, anonKey } = await startRealtimeTestStack());
  });
  afterEach(async () => {
    for (const client of clients.splice(0)) await client.removeAllChannels();
  });
  afterAll(() => stack?.close());

  it('expiry closes the channel with a system error; the client sees CLOSED', async () => {
    const { owner, team } = await memberTeam();
    const shortJwt = await make.jwt(owner.id, 2);
    const client = supabaseFor(origin, anonKey, () => shortJwt);
    const listener = supabaseFor(origin, anonKey, () => null);
    clients.push(client, listener);
    // supabase-js builds the first join in the tick of subscribe(); before its accessToken callback
    // resolved that join carries no token (refused, retried a second later): resolve it first.
    await client.realtime.setAuth();
    const systemMessages: Array<Record<string, unknown>> = [];
    const channel = client.channel(`team:${team.id}`).on('system', {}, (m) => systemMessages.push(m));
    const seen = statuses(channel);
    await seen.ready;
    await waitFor(() => seen.list.some((s) => s.status === 'CLOSED'), 'the channel closed at expiry', 6_000);
    expect(systemMessages).toEqual([{ extension: 'system', status: 'error', message: expect.stringMatching(/^Token has expired \d+ seconds ago$/), channel: `team:${team.id}` }]);
    expect(seen.list.map((s) => s.status)).toEqual(['SUBSCRIBED', 'CLOSED']);
  });

  it('a refreshed token (setAuth pushes access_token) keeps the channel past the first token\'s expiry', async () => {
    const { owner, team } = await memberTeam();
    const member = await make.user('member');
    await addTeamMember(stack.db, { teamId: team.id, userId: member.id, role: 'member' });
    let jwt = await make.jwt(owner.id, 2);
    const client = supabaseFor(origin, anonKey, () => jwt);
    const other = supabaseFor(origin, anonKey, () => null);
    clients.push(client, other);
    const otherJwt = await make.jwt(member.id);
    await other.realtime.setAuth(otherJwt);
    const got: unknown[] = [];
    const channel = client.channel(`team:${team.id}`).on('broadcast', { event: 'ping' }, (m) => got.push(m.payload));
    const seen = statuses(channel);
    await seen.ready;
    jwt = await make.jwt(owner.id, 600);
    await client.realtime.setAuth(jwt);
    await sleep(3_000);
    const sender = other.channel(`team:${team.id}`);
    await statuses(sender).ready;
    await sender.send({ type: 'broadcast', event: 'ping', payload: { after: 'expiry of the first token' } });
    await waitFor(() => got.length === 1, 'the broadcast after the first token expired');
    expect(seen.list.map((s) => s.status)).toEqual(['SUBSCRIBED']);
  });

  it('with the accessToken callback, supabase-js refreshes on each heartbeat: a new token from the callback keeps the channel', async () => {
    const { owner, team } = await memberTeam();
    let jwt = await make.jwt(owner.id, 2);
    const client = supabaseFor(origin, anonKey, () => jwt, { heartbeatIntervalMs: 400 });
    clients.push(client);
    await client.realtime.setAuth();
    const channel = client.channel(`team:${team.id}`);
    const seen = statuses(channel);
    await seen.ready;
    jwt = await make.jwt(owner.id, 600);
    await sleep(3_000);
    expect(seen.list.map((s) => s.status)).toEqual(['SUBSCRIBED']);
    expect(await channel.track({ still: 'here' })).toBe('ok');
  });

  it('an access_token push that is not a valid JWT, or of a user who is not a member, closes the channel with a system error', async () => {
    const { owner, team } = await memberTeam();
    const stranger = await make.user('stranger');
    const apiKey = (await make.apiKey(team.id, owner.id)).token;
    for (const [token, message] of [
      [apiKey, 'InvalidJWTToken: Invalid JWT: not a user token or the anon key'],
      [await make.jwt(stranger.id), `You no longer have permission to read from this Channel topic: team:${team.id}`],
    ] as const) {
      const raw = new RawSocket(socketUrl(origin, { apikey: anonKey, vsn: '2.0.0' }));
      await raw.opened;
      const topic = `realtime:team:${team.id}`;
      const joinRef = raw.join(topic, { config: { broadcast: { self: false, ack: false }, presence: { key: '', enabled: false }, postgres_changes: [], private: false }, access_token: await make.jwt(owner.id) });
      expect((await raw.replyTo(joinRef)).payload).toEqual({ status: 'ok', response: { postgres_changes: [] } });
      raw.push(topic, 'access_token', { access_token: token }, joinRef);
      await waitFor(() => raw.frames().some((f) => f.event === 'phx_close'), 'phx_close');
      const tail = raw.frames().slice(-2);
      expect(tail).toEqual([
        { join_ref: joinRef, ref: null, topic, event: 'system', payload: { extension: 'system', status: 'error', message, channel: `team:${team.id}` } },
        { join_ref: joinRef, ref: joinRef, topic, event: 'phx_close', payload: {} },
      ]);
      // The channel is gone: a broadcast on it is an unmatched topic.
      const after = raw.push(topic, 'broadcast', { type: 'broadcast', event: 'x', payload: {} }, joinRef);
      expect((await raw.replyTo(after)).payload).toEqual({ status: 'error', response: { reason: 'unmatched topic' } });
      raw.close();
    }
  });

  it('a join with an expired JWT is refused', async () => {
    const { owner, team } = await memberTeam();
    const expired = await make.jwt(owner.id, 1);
    await sleep(2_100);
    const raw = new RawSocket(socketUrl(origin, { apikey: anonKey, vsn: '2.0.0' }));
    await raw.opened;
    const ref = raw.join(`realtime:team:${team.id}`, { config: {}, access_token: expired });
    expect((await raw.replyTo(ref)).payload).toEqual({ status: 'error', response: { reason: 'InvalidJWTToken: JWT expired' } });
    raw.close();
  });
});
