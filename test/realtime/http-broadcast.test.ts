import { randomUUID } from 'node:crypto';
import type { SupabaseClient } from '@supabase/supabase-js';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { addTeamMember } from '../../shared/identity/service.js';
import { startRealtimeTestStack, type RealtimeTestStack } from '../harness/realtime.js';
import type { TestStack } from '../harness/stack.js';
import { sleep, statuses, supabaseFor, waitFor } from './clients.js';

// Broadcast over HTTP (docs/realtime.md "HTTP broadcast"): supabase-js's send() on a channel that
// is not joined, and httpSend(), reach the members on the socket; nobody else may send.
describe('realtime broadcast over HTTP', () => {
  let stack: TestStack;
  let make: RealtimeTestStack['make'];
  let origin: string;
  let anonKey: string;
  const clients: SupabaseClient[] = [];

  const clientAs = async (jwt: string | null) => {
    const client = supabaseFor(origin, anonKey, () => jwt);
    await client.realtime.setAuth();
    clients.push(client);
    return client;
  };
  const post = (path: string, body: unknown, headers: Record<string, string>) =>
    fetch(`${origin}/realtime/v1/api/broadcast${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

  async function listening() {
    const owner = await make.user('owner');
    const team = await make.team(owner.id, 'HTTP broadcast');
    const member = await make.user('member');
    await addTeamMember(stack.db, { teamId: team.id, userId: member.id, role: 'member' });
    const got: unknown[] = [];
    const listener = await clientAs(await make.jwt(member.id));
    const channel = listener.channel(`team:${team.id}`).on('broadcast', { event: '*' }, (m) => got.push({ event: m.event, payload: m.payload }));
    await statuses(channel).ready;
    return { owner, team, got, ownerJwt: await make.jwt(owner.id) };
  }

  beforeAll(async () => {
    ({ stack, make, origin, anonKey } = await startRealtimeTestStack());
  });
  afterEach(async () => {
    for (const client of clients.splice(0)) await client.removeAllChannels();
  });
  afterAll(() => stack?.close());

  it('httpSend() and send() on a channel that is not joined reach the members on the socket', async () => {
    const { team, got, ownerJwt } = await listening();
    const sender = await clientAs(ownerJwt);
    const channel = sender.channel(`team:${team.id}`);
    expect(await channel.httpSend('ping', { n: 1 })).toEqual({ success: true });
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    expect(await channel.send({ type: 'broadcast', event: 'pong', payload: { n: 2 } })).toBe('ok');
    warn.mockRestore();
    await waitFor(() => got.length === 2, 'both messages');
    expect(got).toEqual([{ event: 'ping', payload: { n: 1 } }, { event: 'pong', payload: { n: 2 } }]);
  });

  it('an outsider, the anon role, no anon key, a non-member topic, a big payload or a bad body are refused, and nothing is sent', async () => {
    const { team, got, ownerJwt } = await listening();
    const outsider = await clientAs(await make.jwt((await make.user('stranger')).id));
    await expect(outsider.channel(`team:${team.id}`).httpSend('x', { leak: true })).rejects.toThrow(`You do not have permissions to write to this Channel topic: team:${team.id}`);
    // Another team's topic answers exactly as a team that does not exist (the id sweep relies on it).
    const missing = `team:${randomUUID()}`;
    await expect(outsider.channel(missing).httpSend('x', { leak: true })).rejects.toThrow(`You do not have permissions to write to this Channel topic: ${missing}`);
    const auth = { apikey: anonKey, authorization: `Bearer ${ownerJwt}` };
    const cases: Array<[string, unknown, Record<string, string>, number, string]> = [
      ['', { messages: [{ topic: `team:${team.id}`, event: 'x', payload: {} }] }, { apikey: anonKey }, 403, 'Broadcast needs a signed-in member of the topic\'s team'],
      ['', { messages: [{ topic: `team:${team.id}`, event: 'x', payload: {} }] }, { authorization: `Bearer ${ownerJwt}` }, 401, 'No API key found in request'],
      ['', { messages: [{ topic: `team:${team.id}`, event: 'x', payload: {} }, { topic: 'lobby', event: 'x', payload: {} }] }, auth, 403, 'Broadcast and presence work only on the topics team:<id>, project:<id> and document:<id>'],
      ['', { messages: [{ topic: `team:${team.id}`, event: 'x', payload: { pad: 'p'.repeat(300_000) } }] }, auth, 413, 'A broadcast payload has at most 262144 bytes'],
      ['', { messages: [] }, auth, 400, 'The body is { messages: [{ topic, event, payload }] } with 1 to 100 messages'],
      ['', { messages: [{ topic: 1, event: 'x' }] }, auth, 400, 'Each message needs a string topic and event'],
    ];
    for (const [path, body, headers, status, message] of cases) {
      const res = await post(path, body, headers);
      expect([res.status, (await res.json() as { message: string }).message]).toEqual([status, message]);
    }
    await sleep(300);
    expect(got).toEqual([]);
  });
});
