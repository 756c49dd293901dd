import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Graph } from '../../shared/documents/graph.js';
import { addTeamMember } from '../../shared/identity/service.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { until } from '../harness/until.js';

// Background runs and signed callbacks (CONTRACTS.md "Long runs"): a local receiver on 127.0.0.1
// (allowed the way http-block tests allow it), signatures checked here with node:crypto per the
// Standard Webhooks spec — not with the library that signs them — retries on 500, the delivery log,
// the secret's rotation with its overlap, and callback URLs the outbound rules refuse.

interface Received { id: string; timestamp: string; signature: string; body: string }

/** Standard Webhooks: base64(HMAC-SHA256(secret bytes, "<id>.<timestamp>.<body>")), secret = base64 after `whsec_`. */
function verifies(secret: string, message: Received): boolean {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${message.id}.${message.timestamp}.${message.body}`).digest();
  return message.signature.split(' ').some((part) => {
    const [version, value] = part.split(',');
    const given = Buffer.from(value ?? '', 'base64');
    return version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected);
  });
}

const waitGraph: Graph = {
  blocks: [
    { id: 'q', type: 'input', name: 'q', config: { valueType: 'string', required: true } },
    { id: 'pause', type: 'wait', name: 'pause', config: { seconds: 1 } },
    { id: 'o', type: 'output', name: 'o', config: { value: 'done {{q}}' } },
  ],
  edges: [{ from: 'q', to: 'pause' }, { from: 'pause', to: 'o' }],
};
const quickGraph: Graph = {
  blocks: [{ id: 'q', type: 'input', name: 'q', config: { valueType: 'string', required: true } }, { id: 'o', type: 'output', name: 'o', config: { value: 'hi {{q}}' } }],
  edges: [{ from: 'q', to: 'o' }],
};

describe('background runs and callbacks', () => {
  let stack: TestStack;
  let receiver: http.Server;
  let receiverUrl: string;
  let received: Received[] = [];
  /** How many POSTs to answer 500 before answering 200. */
  let failFirst = 0;
  let teamId: string;
  let apiKey: string;
  let ownerJwt: string;
  let memberJwt: string;
  let strangerJwt: string;
  let secret: string;

  beforeAll(async () => {
    receiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({
          id: String(req.headers['webhook-id']), timestamp: String(req.headers['webhook-timestamp']),
          signature: String(req.headers['webhook-signature']), body: Buffer.concat(chunks).toString('utf8'),
        });
        if (failFirst > 0) { failFirst -= 1; res.writeHead(500).end('not yet'); return; }
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const port = (receiver.address() as AddressInfo).port;
    receiverUrl = `http://127.0.0.1:${port}/hooks`;

    stack = await createTestStack();
    await stack.startWorker();
    await upsertSiteSetting(stack.db, 'http_block.allow_hosts', [`127.0.0.1:${port}`]);
    stack.deps.settings.invalidate();
    const make = credentialFactory(stack);
    const tenant = await make.fundedTenant(1_000_000);
    teamId = tenant.team.id;
    apiKey = tenant.apiKey;
    ownerJwt = await make.jwt(tenant.owner.id);
    const member = await make.user('member');
    await addTeamMember(stack.db, { teamId, userId: member.id, role: 'member' });
    memberJwt = await make.jwt(member.id);
    strangerJwt = await make.jwt((await make.user('stranger')).id);
    const rotated = await stack.app.inject({ method: 'POST', url: `/teams/${teamId}/outbound-webhook-secret`, headers: { authorization: `Bearer ${ownerJwt}` } });
    expect(rotated.statusCode).toBe(200);
    expect(rotated.json()).toEqual({ secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/), previousExpiresAt: null });
    secret = rotated.json().secret;
  });
  afterAll(async () => {
    await stack?.close();
    receiver?.close();
  });
  beforeEach(() => { received = []; failFirst = 0; });

  const run = async (graph: Graph, payload: Record<string, unknown>, url = '/api/released-app/:id/run') => {
    const { deploymentId, documentId } = await publishDirect(stack.db, graph, { teamId });
    return stack.app.inject({ method: 'POST', url: url.replace(':id', url.startsWith('/v1') ? documentId : deploymentId), headers: { authorization: `Bearer ${apiKey}` }, payload });
  };
  const deliveries = async (runId: string) =>
    (await stack.app.inject({ method: 'GET', url: `/api/runs/${runId}/deliveries`, headers: { authorization: `Bearer ${apiKey}` } })).json().deliveries as Array<Record<string, unknown>>;
  const balance = async () => (await stack.db.selectFrom('credit_balances').select('balance_milli').where('team_id', '=', teamId).executeTakeFirstOrThrow()).balance_milli;

  it('mode background answers 202 at once; block_waiting and run_complete are POSTed in order, signed with the team secret', async () => {
    const res = await run(waitGraph, { inputs: { q: 'x' }, mode: 'background', callback: { url: receiverUrl, events: ['block_waiting', 'run_complete'] } });
    expect(res.statusCode).toBe(202);
    const body = res.json();
    expect(body).toEqual({ runId: expect.any(String), status: 'queued', statusUrl: `/runs/${body.runId}`, eventsUrl: `/api/runs/${body.runId}/events` });

    await until(async () => received.length >= 2, 15_000, 'two callbacks');
    const [waiting, complete] = received.map((m) => ({ ...m, json: JSON.parse(m.body) as Record<string, unknown> }));
    expect(waiting!.json).toMatchObject({ type: 'block_waiting', runId: body.runId, event: { type: 'block_waiting', blockId: 'pause', blockType: 'wait' } });
    expect(complete!.json).toMatchObject({ type: 'run_complete', runId: body.runId, event: { type: 'run_complete' } });
    for (const message of received) {
      expect(verifies(secret, message)).toBe(true);
      expect(Math.abs(Number(message.timestamp) - Date.now() / 1000)).toBeLessThan(30);
    }
    expect(verifies('whsec_' + Buffer.alloc(32).toString('base64'), received[0]!)).toBe(false);
    // webhook-id is the event's id in the run's log.
    const ids = (await stack.db.selectFrom('run_events').select(['id', 'type']).where('run_id', '=', body.runId).execute());
    expect(received.map((m) => m.id)).toEqual([String(ids.find((e) => e.type === 'block_waiting')!.id), String(ids.find((e) => e.type === 'run_complete')!.id)]);

    await until(async () => (await deliveries(body.runId)).every((d) => d.status === 'delivered') && (await deliveries(body.runId)).length === 2, 5_000, 'the log');
    expect(await deliveries(body.runId)).toEqual([
      { eventId: waiting!.id, type: 'block_waiting', url: receiverUrl, attempts: 1, status: 'delivered', lastStatusCode: 200, lastError: null, deliveredAt: expect.any(String) },
      { eventId: complete!.id, type: 'run_complete', url: receiverUrl, attempts: 1, status: 'delivered', lastStatusCode: 200, lastError: null, deliveredAt: expect.any(String) },
    ]);
  });

  it('a receiver that answers 500 gets the event again until it answers 2xx; the log counts the attempts', async () => {
    failFirst = 2;
    const res = await run(quickGraph, { inputs: { q: 'x' }, stream: false, callback: { url: receiverUrl } });
    expect(res.statusCode).toBe(200);
    const runId = res.json().runId as string;
    await until(async () => (await deliveries(runId))[0]?.status === 'delivered', 20_000, 'the delivery after retries');
    expect(received).toHaveLength(3);
    expect(new Set(received.map((m) => m.id)).size).toBe(1);
    expect(received.every((m) => verifies(secret, m))).toBe(true);
    expect(await deliveries(runId)).toEqual([expect.objectContaining({ type: 'run_complete', attempts: 3, status: 'delivered', lastStatusCode: 200, lastError: null })]);
  });

  it('after a rotation both the new and the previous secret sign, for 24 h', async () => {
    const rotated = await stack.app.inject({ method: 'POST', url: `/teams/${teamId}/outbound-webhook-secret`, headers: { authorization: `Bearer ${ownerJwt}` } });
    const { secret: next, previousExpiresAt } = rotated.json();
    expect(next).not.toBe(secret);
    expect(Date.parse(previousExpiresAt) - Date.now()).toBeGreaterThan(23.9 * 3600_000);
    const res = await run(quickGraph, { inputs: { q: 'x' }, mode: 'background', callback: { url: receiverUrl } });
    await until(async () => (await deliveries(res.json().runId))[0]?.status === 'delivered', 15_000, 'the delivery');
    expect(received[0]!.signature.split(' ')).toHaveLength(2);
    expect(verifies(next, received[0]!)).toBe(true);
    expect(verifies(secret, received[0]!)).toBe(true);
    secret = next;
  });

  it('only owners and admins rotate; another team answers 404; nothing changes', async () => {
    const before = await stack.db.selectFrom('team_outbound_webhook_secrets').selectAll().where('team_id', '=', teamId).executeTakeFirstOrThrow();
    const member = await stack.app.inject({ method: 'POST', url: `/teams/${teamId}/outbound-webhook-secret`, headers: { authorization: `Bearer ${memberJwt}` } });
    expect(member.statusCode).toBe(403);
    const stranger = await stack.app.inject({ method: 'POST', url: `/teams/${teamId}/outbound-webhook-secret`, headers: { authorization: `Bearer ${strangerJwt}` } });
    expect(stranger.statusCode).toBe(404);
    const key = await stack.app.inject({ method: 'POST', url: `/teams/${teamId}/outbound-webhook-secret`, headers: { authorization: `Bearer ${apiKey}` } });
    expect(key.statusCode).toBe(403);
    expect(await stack.db.selectFrom('team_outbound_webhook_secrets').selectAll().where('team_id', '=', teamId).executeTakeFirstOrThrow()).toEqual(before);
  });

  it.each([
    ['a private address', 'http://10.0.0.1/hook'],
    ['the metadata address', 'http://169.254.169.254/latest'],
    ['loopback on a port not allowed', 'http://127.0.0.1:1/hook'],
    ['not http', 'ftp://example.com/hook'],
    ['not a URL', 'hook please'],
  ])('a callback URL the rules refuse (%s) is 400 invalid_callback_url before anything is charged', async (_name, url) => {
    const runsBefore = (await stack.db.selectFrom('runs').select('id').where('team_id', '=', teamId).execute()).length;
    const balanceBefore = await balance();
    const res = await run(quickGraph, { inputs: { q: 'x' }, mode: 'background', callback: { url } });
    expect([res.statusCode, res.json().error]).toEqual([400, 'invalid_callback_url']);
    expect(await balance()).toBe(balanceBefore);
    expect((await stack.db.selectFrom('runs').select('id').where('team_id', '=', teamId).execute()).length).toBe(runsBefore);
    expect(received).toEqual([]);
  });

  it('a background run with an Idempotency-Key is started and charged once', async () => {
    const { deploymentId } = await publishDirect(stack.db, quickGraph, { teamId });
    const key = `bg-${Date.now()}`;
    const send = () => stack.app.inject({
      method: 'POST', url: `/api/released-app/${deploymentId}/run`, headers: { authorization: `Bearer ${apiKey}`, 'idempotency-key': key },
      payload: { inputs: { q: 'x' }, mode: 'background' },
    });
    const balanceBefore = await balance();
    const first = await send();
    const second = await send();
    expect([first.statusCode, second.statusCode]).toEqual([202, 202]);
    expect(second.json().runId).toBe(first.json().runId);
    expect((await stack.db.selectFrom('runs').select('id').where('deployment_id', '=', deploymentId).execute()).length).toBe(1);
    expect(balanceBefore - await balance()).toBeGreaterThan(0);
    const charges = await stack.db.selectFrom('credit_transactions').select('id').where('reference', '=', `run:${first.json().runId}`).execute();
    expect(charges).toHaveLength(1);
  });

  it('/v1 takes mode background too', async () => {
    const res = await run(quickGraph, { input: 'x', mode: 'background', callback: { url: receiverUrl } }, '/v1/workflows/:id/run');
    expect(res.statusCode).toBe(202);
    expect(res.json().status).toBe('queued');
    await until(async () => received.length === 1, 15_000, 'the callback');
    expect(JSON.parse(received[0]!.body)).toMatchObject({ type: 'run_complete', runId: res.json().runId });
  });

  it('the delivery log of another team\'s run is 404', async () => {
    const res = await run(quickGraph, { inputs: { q: 'x' }, mode: 'background' });
    const other = await credentialFactory(stack).fundedTenant();
    const foreign = await stack.app.inject({ method: 'GET', url: `/api/runs/${res.json().runId}/deliveries`, headers: { authorization: `Bearer ${other.apiKey}` } });
    expect(foreign.statusCode).toBe(404);
  });
});
