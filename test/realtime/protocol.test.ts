import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addTeamMember } from '../../shared/identity/service.js';
import { startRealtimeTestStack, type RealtimeTestStack } from '../harness/realtime.js';
import type { TestStack } from '../harness/stack.js';
import { binaryBroadcastPush, decodeUserBroadcast, joinPayload, RawSocket, sleep, socketUrl, waitFor } from './clients.js';

// The Phoenix wire itself, frame by frame (docs/realtime.md "Protocol"): vsn 1.0.0 objects and
// vsn 2.0.0 arrays, heartbeats, binary broadcasts (kind 3 in, kind 4 out), presence frames, leave.
describe('realtime protocol frames', () => {
  let stack: TestStack;
  let make: RealtimeTestStack['make'];
  let origin: string;
  let anonKey: string;
  const sockets: RawSocket[] = [];

  const open = async (vsn: '1.0.0' | '2.0.0') => {
    const raw = new RawSocket(socketUrl(origin, { apikey: anonKey, vsn }), vsn);
    sockets.push(raw);
    await raw.opened;
    return raw;
  };

  async function twoMembers() {
    const owner = await make.user('owner');
    const team = await make.team(owner.id, 'Protocol');
    const member = await make.user('member');
    await addTeamMember(stack.db, { teamId: team.id, userId: member.id, role: 'member' });
    return { owner, member, team, ownerJwt: await make.jwt(owner.id), memberJwt: await make.jwt(member.id) };
  }

  beforeAll(async () => {
    ({ stack, make, origin, anonKey } = await startRealtimeTestStack());
  });
  afterAll(async () => {
    for (const raw of sockets) raw.close();
    await stack?.close();
  });

  it('vsn 1.0.0 speaks JSON objects: heartbeat and join replies; a socket without vsn is 1.0.0', async () => {
    const { team, ownerJwt } = await twoMembers();
    const raw = await open('1.0.0');
    const heartbeat = raw.push('phoenix', 'heartbeat', {});
    await raw.replyTo(heartbeat);
    expect(raw.received[0]).toEqual({ binary: false, data: { join_ref: null, ref: heartbeat, topic: 'phoenix', event: 'phx_reply', payload: { status: 'ok', response: {} } } });
    const join = raw.join(`realtime:team:${team.id}`, joinPayload({ token: ownerJwt }));
    expect(await raw.replyTo(join)).toEqual({ join_ref: join, ref: join, topic: `realtime:team:${team.id}`, event: 'phx_reply', payload: { status: 'ok', response: { postgres_changes: [] } } });

    const bare = new RawSocket(socketUrl(origin, { apikey: anonKey }), '1.0.0');
    sockets.push(bare);
    await bare.opened;
    const ref = bare.push('phoenix', 'heartbeat', {});
    await bare.replyTo(ref);
    expect(Array.isArray(bare.received[0]!.data)).toBe(false);
  });

  it('a binary broadcast push reaches vsn 2.0.0 members as a kind-4 frame and vsn 1.0.0 members as JSON; raw bytes only reach vsn 2.0.0', async () => {
    const { team, ownerJwt, memberJwt } = await twoMembers();
    const topic = `realtime:team:${team.id}`;
    const [sender, v2, v1] = [await open('2.0.0'), await open('2.0.0'), await open('1.0.0')];
    const refs = [sender.join(topic, joinPayload({ token: ownerJwt, ack: true })), v2.join(topic, joinPayload({ token: memberJwt })), v1.join(topic, joinPayload({ token: memberJwt }))];
    await sender.replyTo(refs[0]!); await v2.replyTo(refs[1]!); await v1.replyTo(refs[2]!);

    sender.ws.send(binaryBroadcastPush(refs[0]!, '50', topic, 'cursor', Buffer.from('{"x":1}')));
    expect((await sender.replyTo('50')).payload).toEqual({ status: 'ok', response: {} });
    await waitFor(() => v2.received.some((m) => m.binary) && v1.frames().some((f) => f.event === 'broadcast'), 'both copies');
    const binary = decodeUserBroadcast(v2.received.find((m) => m.binary)!.data as Buffer);
    expect({ ...binary, payload: JSON.parse(binary.payload.toString()) }).toEqual({ topic, event: 'cursor', encoding: 1, payload: { x: 1 } });
    expect(v1.frames().find((f) => f.event === 'broadcast')).toEqual({ join_ref: null, ref: null, topic, event: 'broadcast', payload: { type: 'broadcast', event: 'cursor', payload: { x: 1 } } });

    // A JSON-array broadcast push (vsn 2.0.0 without the binary form) is accepted the same way.
    sender.push(topic, 'broadcast', { type: 'broadcast', event: 'json-form', payload: { y: 2 } }, refs[0]!);
    await waitFor(() => v1.frames().some((f) => f.event === 'broadcast' && f.payload.event === 'json-form'), 'json form');

    sender.ws.send(binaryBroadcastPush(refs[0]!, '51', topic, 'bytes', Buffer.from([0, 1, 2, 255]), 'binary'));
    await waitFor(() => v2.received.filter((m) => m.binary).length === 3, 'raw bytes at vsn 2.0.0');
    const raw = decodeUserBroadcast(v2.received.filter((m) => m.binary)[2]!.data as Buffer);
    expect([raw.event, raw.encoding, [...raw.payload]]).toEqual(['bytes', 0, [0, 1, 2, 255]]);
    await sleep(200);
    expect(v1.frames().filter((f) => f.event === 'broadcast').map((f) => f.payload.event)).toEqual(['cursor', 'json-form']);
  });

  it('presence frames: presence_state after a join with presence on, presence_diff on track and on leave', async () => {
    const { team, ownerJwt, memberJwt } = await twoMembers();
    const topic = `realtime:team:${team.id}`;
    const [a, b] = [await open('2.0.0'), await open('2.0.0')];
    const aJoin = a.join(topic, joinPayload({ token: ownerJwt, presence: true, key: 'alice' }));
    await a.replyTo(aJoin);
    await waitFor(() => a.frames().find((f) => f.event === 'presence_state'), 'presence_state');
    expect(a.frames().find((f) => f.event === 'presence_state')).toEqual({ join_ref: aJoin, ref: null, topic, event: 'presence_state', payload: {} });
    const track = a.push(topic, 'presence', { type: 'presence', event: 'track', payload: { mood: 'ok' } }, aJoin);
    expect((await a.replyTo(track)).payload).toEqual({ status: 'ok', response: {} });

    const bJoin = b.join(topic, joinPayload({ token: memberJwt, presence: true, key: 'bob' }));
    await b.replyTo(bJoin);
    await waitFor(() => b.frames().find((f) => f.event === 'presence_state'), 'b presence_state');
    expect(b.frames().find((f) => f.event === 'presence_state')!.payload).toEqual({ alice: { metas: [{ mood: 'ok', phx_ref: expect.any(String) }] } });

    const leave = a.push(topic, 'phx_leave', {}, aJoin);
    expect((await a.replyTo(leave)).payload).toEqual({ status: 'ok', response: {} });
    await waitFor(() => b.frames().find((f) => f.event === 'presence_diff'), 'leave diff');
    expect(b.frames().find((f) => f.event === 'presence_diff')!.payload).toEqual({ joins: {}, leaves: { alice: { metas: [{ mood: 'ok', phx_ref: expect.any(String) }] } } });

    // A track too big closes the channel, as the real server does.
    const bigTrack = b.push(topic, 'presence', { type: 'presence', event: 'track', payload: { pad: 'z'.repeat(20_000) } }, bJoin);
    await waitFor(() => b.frames().some((f) => f.event === 'phx_close'), 'channel closed');
    expect(b.reply(bigTrack)).toBeUndefined();
    expect(b.frames().find((f) => f.event === 'system')!.payload).toEqual({ extension: 'system', status: 'error', message: 'Track message size exceeded', channel: `team:${team.id}` });
  });

  it('/metrics counts open sockets, joined channels and broadcasts', async () => {
    const { team, ownerJwt } = await twoMembers();
    const topic = `realtime:team:${team.id}`;
    const metric = async (name: string) => {
      const text = await (await fetch(`${origin}/metrics`)).text();
      return Number(new RegExp(`^${name.replace(/[{}"]/g, (c) => `\\${c}`)} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
    };
    const before = { sockets: await metric('realtime_sockets'), channels: await metric('realtime_channels'), local: await metric('realtime_broadcasts_total{origin="local"}') };
    expect(Number.isInteger(before.sockets) && Number.isInteger(before.channels)).toBe(true);
    const raw = await open('2.0.0');
    const join = raw.join(topic, joinPayload({ token: ownerJwt }));
    await raw.replyTo(join);
    raw.push(topic, 'broadcast', { type: 'broadcast', event: 'm', payload: {} }, join);
    await sleep(100);
    expect(await metric('realtime_sockets')).toBe(before.sockets + 1);
    expect(await metric('realtime_channels')).toBe(before.channels + 1);
    expect(await metric('realtime_broadcasts_total{origin="local"}')).toBe((Number.isNaN(before.local) ? 0 : before.local) + 1);
  });

  it('a channel on another topic name takes postgres_changes only: broadcast and presence there are refused', async () => {
    const { ownerJwt } = await twoMembers();
    const raw = await open('2.0.0');
    const topic = 'realtime:public-changes';
    const join = raw.join(topic, joinPayload({ token: ownerJwt }));
    expect((await raw.replyTo(join)).payload).toEqual({ status: 'ok', response: { postgres_changes: [] } });
    const reason = 'Broadcast and presence work only on the topics team:<id>, project:<id> and document:<id>';
    const b = raw.push(topic, 'broadcast', { type: 'broadcast', event: 'x', payload: {} }, join);
    expect((await raw.replyTo(b)).payload).toEqual({ status: 'error', response: { reason } });
    const p = raw.push(topic, 'presence', { type: 'presence', event: 'track', payload: {} }, join);
    expect((await raw.replyTo(p)).payload).toEqual({ status: 'error', response: { reason } });
  });
});
