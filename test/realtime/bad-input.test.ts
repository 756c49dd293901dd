import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addTeamMember } from '../../shared/identity/service.js';
import { startRealtimeTestStack, type RealtimeTestStack } from '../harness/realtime.js';
import type { TestStack } from '../harness/stack.js';
import { binaryBroadcastPush, joinPayload, RawSocket, sleep, socketUrl, subscribed, supabaseFor, waitFor } from './clients.js';

// Bad input at /realtime/v1/websocket, each with its test (issue 37): refused upgrades, refused
// joins (Phoenix error reply plus a system message), malformed and oversized frames, too many
// joins, a broadcast flood and a client that stops reading. Nothing a client sends changes the
// database.
describe('realtime bad input', () => {
  let stack: TestStack;
  let make: RealtimeTestStack['make'];
  let origin: string;
  let anonKey: string;
  const sockets: RawSocket[] = [];

  const open = async (params: Record<string, string> = {}, vsn: '1.0.0' | '2.0.0' = '2.0.0') => {
    const raw = new RawSocket(socketUrl(origin, { apikey: anonKey, vsn, ...params }), vsn);
    sockets.push(raw);
    await raw.opened;
    return raw;
  };
  const refusedUpgrade = async (params: Record<string, string>) => {
    const raw = new RawSocket(socketUrl(origin, params));
    sockets.push(raw);
    return raw.opened.then(() => { throw new Error('the upgrade was accepted'); }, (error: { status: number; body: string }) => ({ status: error.status, body: JSON.parse(error.body) as unknown }));
  };
  const databaseState = async () => {
    const { rows } = await sql<{ documents: number; projects: number; teams: number }>`select (select count(*) from documents)::int as documents, (select count(*) from projects)::int as projects, (select count(*) from teams)::int as teams`.execute(stack.db);
    return rows[0];
  };

  async function memberTeam() {
    const owner = await make.user('owner');
    const team = await make.team(owner.id, 'Bad input');
    return { owner, team, jwt: await make.jwt(owner.id) };
  }

  beforeAll(async () => {
    ({ stack, make, origin, anonKey } = await startRealtimeTestStack());
  });
  afterAll(async () => {
    for (const raw of sockets) raw.close();
    await stack?.close();
  });

  it('no anon key, a wrong one, or a workflow API key as apikey: 401 before the upgrade; an unknown vsn: 400', async () => {
    const { owner, team } = await memberTeam();
    const apiKey = (await make.apiKey(team.id, owner.id)).token;
    expect(await refusedUpgrade({ vsn: '2.0.0' })).toEqual({ status: 401, body: { code: 'PGRST301', message: 'No API key found in request', details: null, hint: expect.any(String) } });
    expect(await refusedUpgrade({ apikey: 'wfd-anon-forged', vsn: '2.0.0' })).toEqual({ status: 401, body: expect.objectContaining({ code: 'PGRST301', message: 'Invalid API key' }) });
    expect(await refusedUpgrade({ apikey: apiKey, vsn: '2.0.0' })).toEqual({ status: 401, body: expect.objectContaining({ code: 'PGRST301', message: 'Invalid API key' }) });
    expect(await refusedUpgrade({ apikey: anonKey, vsn: '3.0.0' })).toEqual({ status: 400, body: expect.objectContaining({ code: 'PGRST100', message: 'Unsupported vsn 3.0.0: 1.0.0 or 2.0.0' }) });
  });

  it('a join with an API key (or garbage) as access_token, without a token, or on another team\'s topic: error reply and a system message', async () => {
    const { owner, team, jwt } = await memberTeam();
    const other = await memberTeam();
    const apiKey = (await make.apiKey(team.id, owner.id)).token;
    const raw = await open();
    const cases: Array<[string, Record<string, unknown>, string]> = [
      [`realtime:team:${team.id}`, joinPayload({ token: apiKey }), 'InvalidJWTToken: Invalid JWT: not a user token or the anon key'],
      [`realtime:team:${team.id}`, joinPayload({ token: 'not.a.jwt' }), 'InvalidJWTToken: Invalid JWT: not a user token or the anon key'],
      [`realtime:team:${team.id}`, joinPayload(), `Unauthorized: You do not have permissions to read from this Channel topic: team:${team.id}`],
      [`realtime:team:${other.team.id}`, joinPayload({ token: jwt }), `Unauthorized: You do not have permissions to read from this Channel topic: team:${other.team.id}`],
      [`realtime:team:not-a-uuid`, joinPayload({ token: jwt }), 'Unauthorized: You do not have permissions to read from this Channel topic: team:not-a-uuid'],
      [`realtime:document:${randomUUID()}`, joinPayload({ token: jwt }), expect.stringMatching(/^Unauthorized: /) as unknown as string],
      ['realtime:lobby', joinPayload({ token: jwt, presence: true }), 'Unauthorized: Broadcast and presence work only on the topics team:<id>, project:<id> and document:<id>'],
      ['realtime:', joinPayload({ token: jwt }), 'TopicNameRequired: You must provide a topic name'],
    ];
    for (const [topic, payload, reason] of cases) {
      const ref = raw.join(topic, payload);
      expect((await raw.replyTo(ref)).payload).toEqual({ status: 'error', response: { reason } });
      await waitFor(() => raw.frames().find((f) => f.event === 'system' && f.join_ref === ref), `system message for ${topic}`);
      expect(raw.frames().find((f) => f.event === 'system' && f.join_ref === ref)).toEqual({ join_ref: ref, ref: null, topic, event: 'system', payload: { extension: 'system', status: 'error', message: reason, channel: topic.slice('realtime:'.length) } });
    }
    const unmatched = raw.join('lobby', joinPayload());
    expect((await raw.replyTo(unmatched)).payload).toEqual({ status: 'error', response: { reason: 'unmatched topic' } });
  });

  it('postgres_changes: the join reply echoes the bindings in order with ids; a filter on a missing column, another operator, SQL, or a relation not offered is refused, and the database is unchanged', async () => {
    const { team, jwt } = await memberTeam();
    const before = await databaseState();
    const raw = await open();
    const bindings = [
      { event: 'INSERT', schema: 'public', table: 'documents' },
      { event: '*', schema: 'public', table: 'projects', filter: `team_id=eq.${team.id}` },
      { event: 'DELETE', schema: 'public', table: 'projects', filter: 'name=eq.it\'s; drop table projects; --' },
    ];
    const ok = raw.join('realtime:any-name-for-changes', joinPayload({ token: jwt, postgresChanges: bindings }));
    const reply = (await raw.replyTo(ok)).payload as { status: string; response: { postgres_changes: Array<{ id: number }> } };
    expect(reply.status).toBe('ok');
    expect(reply.response.postgres_changes).toEqual(bindings.map((b) => ({ ...b, id: expect.any(Number) })));
    expect(new Set(reply.response.postgres_changes.map((b) => b.id)).size).toBe(3);
    await waitFor(() => raw.frames().find((f) => f.event === 'system' && f.join_ref === ok), 'subscribed message');

    const refused: Array<[unknown, string]> = [
      [{ event: '*', schema: 'public', table: 'documents', filter: 'nope=eq.1' }, 'InvalidFilter: column "nope" does not exist on relation documents'],
      [{ event: '*', schema: 'public', table: 'documents', filter: 'id=in.(select id from documents)' }, 'InvalidFilter: only the eq operator is supported, got "in" in "id=in.(select id from documents)"'],
      [{ event: '*', schema: 'public', table: 'documents', filter: 'id=eq.1 or 1=1' }, 'InvalidFilter: "1 or 1=1" is not a valid uuid for column "id" of documents'],
      [{ event: '*', schema: 'public', table: 'documents', filter: 'id;drop table documents--=eq.x' }, 'InvalidFilter: column "id;drop table documents--" does not exist on relation documents'],
      [{ event: '*', schema: 'public', table: 'documents', filter: 'team_id=gt.5' }, 'InvalidFilter: only the eq operator is supported, got "gt" in "team_id=gt.5"'],
      [{ event: '*', schema: 'public', table: 'api_keys', filter: 'key_hash=eq.abc' }, 'InvalidFilter: column "key_hash" does not exist on relation api_keys'],
      [{ event: '*', schema: 'public', table: 'audit_logs' }, 'InvalidJoinPayload: relation "audit_logs" is not available to realtime'],
      [{ event: '*', schema: 'public', table: 'documents; drop table documents' }, 'InvalidJoinPayload: relation "documents; drop table documents" is not available to realtime'],
      [{ event: '*', schema: 'pg_catalog', table: 'pg_authid' }, 'InvalidJoinPayload: schema "pg_catalog" is not available (relations live in "public")'],
      [{ event: 'TRUNCATE', schema: 'public', table: 'documents' }, 'InvalidJoinPayload: event must be one of *, INSERT, UPDATE, DELETE, got "TRUNCATE"'],
    ];
    for (const [binding, reason] of refused) {
      const ref = raw.join(`realtime:changes-${randomUUID()}`, joinPayload({ token: jwt, postgresChanges: [binding] }));
      expect((await raw.replyTo(ref)).payload).toEqual({ status: 'error', response: { reason } });
      await waitFor(() => raw.frames().find((f) => f.event === 'system' && f.join_ref === ref), 'system message');
      expect(raw.frames().find((f) => f.event === 'system' && f.join_ref === ref)?.payload).toEqual(expect.objectContaining({ extension: 'postgres_changes', status: 'error', message: reason }));
    }
    expect(await databaseState()).toEqual(before);
  });

  it('supabase-js: postgres_changes bindings subscribe without a binding mismatch; a bad filter is a CHANNEL_ERROR naming it', async () => {
    const { team, jwt } = await memberTeam();
    const client = supabaseFor(origin, anonKey, () => jwt);
    await client.realtime.setAuth();
    const good = client.channel('changes').on('postgres_changes', { event: 'INSERT', schema: 'public', table: 'documents' }, () => {})
      .on('postgres_changes', { event: 'UPDATE', schema: 'public', table: 'projects', filter: `team_id=eq.${team.id}` }, () => {});
    expect(await subscribed(good)).toEqual({ status: 'SUBSCRIBED', error: undefined });
    const bad = client.channel('bad-changes').on('postgres_changes', { event: '*', schema: 'public', table: 'documents', filter: 'secret=eq.1' }, () => {});
    const result = await subscribed(bad);
    expect(result.status).toBe('CHANNEL_ERROR');
    expect(result.error?.message).toBe('InvalidFilter: column "secret" does not exist on relation documents');
    await client.removeAllChannels();
  });

  it('a frame that is not JSON, or not a Phoenix frame, closes the socket with 1007; others are unaffected', async () => {
    const bystander = await open();
    for (const frame of ['{not json', '{"topic":"phoenix"}', '[1,2,3]', '["1","1","phoenix","heartbeat","not an object"]']) {
      const raw = await open();
      raw.ws.send(frame);
      await waitFor(() => raw.closed, 'close');
      expect(raw.closed!.code).toBe(1007);
    }
    const heartbeat = bystander.push('phoenix', 'heartbeat', {});
    expect((await bystander.replyTo(heartbeat))).toEqual({ join_ref: null, ref: heartbeat, topic: 'phoenix', event: 'phx_reply', payload: { status: 'ok', response: {} } });
  });

  it('a 10 MB frame closes the socket with 1009 (message too big) without buffering it; a broadcast over 256 kB is refused', async () => {
    const { team, jwt } = await memberTeam();
    const raw = await open();
    raw.ws.send(JSON.stringify([null, '1', 'phoenix', 'heartbeat', { pad: 'x'.repeat(10 * 1024 * 1024) }]));
    await waitFor(() => raw.closed, 'close');
    expect(raw.closed!.code).toBe(1009);

    const sender = await open();
    const topic = `realtime:team:${team.id}`;
    const joinRef = sender.join(topic, joinPayload({ token: jwt, ack: true }));
    await sender.replyTo(joinRef);
    const ref = sender.push(topic, 'broadcast', { type: 'broadcast', event: 'big', payload: { pad: 'x'.repeat(300 * 1024) } }, joinRef);
    expect((await sender.replyTo(ref)).payload).toEqual({ status: 'error', response: { reason: 'PayloadTooLarge: a broadcast payload has at most 262144 bytes' } });
  });

  it('1,000 joins on one socket: 100 channels join, the next are refused, and the burst closes the socket for its rate', async () => {
    const raw = await open();
    const refs = Array.from({ length: 1000 }, (_, i) => raw.join(`realtime:room-${i}`, joinPayload()));
    await waitFor(() => raw.closed, 'the socket closed', 10_000);
    expect(raw.closed).toEqual({ code: 1008, reason: 'Too many messages per second' });
    const replies = refs.map((ref) => raw.reply(ref)?.payload).filter(Boolean) as Array<{ status: string; response: { reason?: string } }>;
    expect(replies.filter((r) => r.status === 'ok')).toHaveLength(100);
    const refusals = replies.filter((r) => r.status === 'error');
    // (frames still queued when the socket closes are dropped with it)
    expect(refusals.length).toBeGreaterThan(0);
    expect(new Set(refusals.map((r) => r.response.reason))).toEqual(new Set(['ChannelRateLimitReached: Too many channels']));
    expect(replies.length).toBeLessThan(1000);
  });

  it('a broadcast flood: the flooder\'s channel is closed at 100 a second, the other members keep talking', async () => {
    const { owner, team, jwt } = await memberTeam();
    const [second, third] = [await make.user('second'), await make.user('third')];
    for (const user of [second, third]) await addTeamMember(stack.db, { teamId: team.id, userId: user.id, role: 'member' });
    const topic = `realtime:team:${team.id}`;
    const [flooder, receiver, talker] = [await open(), await open(), await open()];
    const refs = [flooder.join(topic, joinPayload({ token: jwt })), receiver.join(topic, joinPayload({ token: await make.jwt(second.id) })), talker.join(topic, joinPayload({ token: await make.jwt(third.id) }))];
    await Promise.all([flooder.replyTo(refs[0]!), receiver.replyTo(refs[1]!), talker.replyTo(refs[2]!)]);
    void owner;

    for (let i = 0; i < 300; i++) flooder.ws.send(binaryBroadcastPush(refs[0]!, String(1000 + i), topic, 'flood', Buffer.from(JSON.stringify({ i }))));
    await waitFor(() => flooder.frames().some((f) => f.event === 'phx_close'), 'the flooder\'s channel closed');
    expect(flooder.frames().find((f) => f.event === 'system')?.payload).toEqual({ extension: 'system', status: 'error', message: 'ClientBroadcastRateLimitReached: Too many messages per second', channel: `team:${team.id}` });
    await sleep(300);
    const flood = receiver.received.filter((m) => m.binary).length;
    expect(flood).toBeGreaterThanOrEqual(100);
    expect(flood).toBeLessThan(150);
    expect(flooder.closed).toBeNull();

    talker.ws.send(binaryBroadcastPush(refs[2]!, '9', topic, 'still', Buffer.from('{"ok":true}')));
    await waitFor(() => receiver.received.filter((m) => m.binary).length === flood + 1, 'the talker\'s broadcast');
  });

  it('a client that stops reading is disconnected with a system message once 4 MiB wait for it, not buffered forever', async () => {
    const { team, jwt } = await memberTeam();
    const member = await make.user('member');
    await addTeamMember(stack.db, { teamId: team.id, userId: member.id, role: 'member' });
    const topic = `realtime:team:${team.id}`;
    const [sender, slow] = [await open(), await open()];
    const refs = [sender.join(topic, joinPayload({ token: jwt })), slow.join(topic, joinPayload({ token: await make.jwt(member.id) }))];
    await sender.replyTo(refs[0]!); await slow.replyTo(refs[1]!);
    (slow.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause();
    const payload = Buffer.from(JSON.stringify({ pad: 'y'.repeat(200 * 1024) }));
    for (let i = 0; i < 90; i++) sender.ws.send(binaryBroadcastPush(refs[0]!, String(100 + i), topic, 'bulk', payload));
    await sleep(1_500);
    (slow.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    await waitFor(() => slow.closed, 'the slow client disconnected', 10_000);
    expect(slow.closed).toEqual({ code: 1008, reason: 'client too slow' });
    expect(slow.frames().find((f) => f.event === 'system')?.payload).toEqual({ extension: 'system', status: 'error', message: 'Client too slow: more than 4194304 bytes waiting to be read; disconnected', channel: `team:${team.id}` });
    expect(slow.received.filter((m) => m.binary).length).toBeLessThan(90);
    expect(sender.closed).toBeNull();
  });
});
