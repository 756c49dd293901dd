import { sql } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleGraph } from '../../shared/documents/example-graph.js';
import type { Graph } from '../../shared/documents/graph.js';
import { RUN_BASE_COST_MILLI } from '../harness/billing.js';
import { grantCredits } from '../../shared/billing/service.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { withSetting as withSettingOf } from '../harness/settings.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

// Reads the trigger context and one optional input, so a result shows what the run was given.
const webhookGraph: Graph = {
  blocks: [
    { id: 'msg', type: 'input', name: 'message', config: { valueType: 'string', required: false, default: 'none' } },
    { id: 'source', type: 'output', name: 'source', config: { value: '{{_trigger.source}}' } },
    { id: 'hook', type: 'output', name: 'hook', config: { value: '{{_trigger.webhook_id}}' } },
    { id: 'echo', type: 'output', name: 'echo', config: { value: '{{msg}}' } },
  ],
  edges: [{ from: 'msg', to: 'echo' }],
};

const NOT_FOUND_BODY = JSON.stringify({ code: 'webhook_not_found', message: 'Webhook not found' });

interface Hook { webhookId: string; secret: string; documentId: string; deploymentId: string }
type Session = { blockId: string; output: unknown };
const outputOf = (body: { sessions: Session[] }, blockId: string) => body.sessions.find((s) => s.blockId === blockId)?.output;

describe('POST /api/webhook-triggers/:webhookId', () => {
  let stack: TestStack;
  let make: ReturnType<typeof credentialFactory>;
  let ownerId: string;
  let teamId: string;
  let ownerJwt: string;
  let apiKey: string;

  /** Publishes `graph` for `team` and generates the trigger's secret through the API. */
  const hook = async (graph: Graph = webhookGraph, team = { id: teamId, ownerId, jwt: '' }): Promise<Hook> => {
    const { documentId, deploymentId } = await publishDirect(stack.db, graph, { teamId: team.id, publishedBy: team.ownerId });
    const res = await stack.app.inject({
      method: 'POST', url: `/api/webhook-triggers/by-document/${documentId}/rotate-secret`, headers: { authorization: `Bearer ${team.jwt || ownerJwt}` },
    });
    expect(res.statusCode, res.body).toBe(200);
    return { webhookId: res.json().id, secret: res.json().secret, documentId, deploymentId };
  };
  /** The raw call: `payload` is sent as it is (a string) or as JSON. */
  const trigger = (webhookId: string, options: { secret?: string; via?: 'bearer' | 'header'; payload?: string | object } = {}) => {
    const headers: Record<string, string> = {};
    if (options.secret !== undefined) {
      if (options.via === 'header') headers['x-webhook-secret'] = options.secret;
      else headers.authorization = `Bearer ${options.secret}`;
    }
    if (options.payload !== undefined) headers['content-type'] = 'application/json';
    const payload = typeof options.payload === 'object' ? JSON.stringify(options.payload) : options.payload;
    return stack.app.inject({ method: 'POST', url: `/api/webhook-triggers/${webhookId}`, headers, ...(payload !== undefined ? { payload } : {}) });
  };
  const runCount = async () => (await stack.db.selectFrom('runs').select('id').execute()).length;
  const triggerRow = (webhookId: string) => stack.db.selectFrom('webhook_triggers').selectAll().where('id', '=', webhookId).executeTakeFirstOrThrow();
  const balanceOf = async (team: string) => (await stack.db.selectFrom('credit_balances').select('balance_milli').where('team_id', '=', team).executeTakeFirst())?.balance_milli ?? 0;
  const withSetting = (key: string, value: unknown, body: () => Promise<void>) => withSettingOf(stack, key, value, body);

  beforeAll(async () => {
    stack = await createTestStack();
    await stack.startWorker();
    make = credentialFactory(stack);
    const tenant = await make.fundedTenant(100_000);
    [ownerId, teamId, apiKey] = [tenant.owner.id, tenant.team.id, tenant.apiKey];
    ownerJwt = await make.jwt(ownerId);
  });
  afterAll(() => stack?.close());

  describe('accepted calls', () => {
    it('runs the published version: the JSON run result, the body as inputs, _trigger from the server', async () => {
      const { webhookId, secret, documentId, deploymentId } = await hook();
      const res = await trigger(webhookId, { secret, payload: { message: 'hi', _trigger: { source: 'forged' } } });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      const body = res.json();
      expect(body).toMatchObject({ runId: res.headers['x-run-id'], documentId, status: 'completed', timedOut: false, duration: expect.any(Number) });
      expect(outputOf(body, 'source')).toBe('webhook');
      expect(outputOf(body, 'hook')).toBe(webhookId);
      expect(outputOf(body, 'echo')).toBe('hi');
      const run = await stack.db.selectFrom('runs').selectAll().where('id', '=', body.runId).executeTakeFirstOrThrow();
      expect(run).toMatchObject({ deployment_id: deploymentId, trigger_source: 'webhook', team_id: teamId, api_key_id: null, user_id: null, status: 'completed' });
      expect((run.inputs as Record<string, unknown>)._trigger).toEqual({ source: 'webhook', webhook_id: webhookId, triggered_at: expect.any(String) });
    });

    it('has the same shape as the non-streaming deployment run', async () => {
      const { webhookId, secret, deploymentId } = await hook();
      const viaWebhook = (await trigger(webhookId, { secret, payload: { message: 'x' } })).json();
      const viaRun = (await stack.app.inject({
        method: 'POST', url: `/api/released-app/${deploymentId}/run`, headers: { authorization: `Bearer ${apiKey}` }, payload: { inputs: { message: 'x' }, stream: false },
      })).json();
      expect(Object.keys(viaWebhook).sort()).toEqual(Object.keys(viaRun).sort());
      const sessionShape = (body: { sessions: Array<Record<string, unknown>> }) => body.sessions.map((s) => [s.blockId, Object.keys(s).sort()]).sort();
      expect(sessionShape(viaWebhook)).toEqual(sessionShape(viaRun));
    });

    it('takes the secret from X-Webhook-Secret too', async () => {
      const { webhookId, secret } = await hook();
      const res = await trigger(webhookId, { secret, via: 'header', payload: {} });
      expect(res.statusCode, res.body).toBe(200);
      expect(outputOf(res.json(), 'source')).toBe('webhook');
    });

    it('an empty body means {}: with and without Content-Type', async () => {
      const { webhookId, secret } = await hook();
      for (const payload of [undefined, '']) {
        const res = await trigger(webhookId, { secret, ...(payload === undefined ? {} : { payload }) });
        expect(res.statusCode, res.body).toBe(200);
        expect(outputOf(res.json(), 'echo')).toBe('none');
        const run = await stack.db.selectFrom('runs').select('inputs').where('id', '=', res.json().runId).executeTakeFirstOrThrow();
        expect(Object.keys(run.inputs as object)).toEqual(['_trigger']);
      }
    });

    it('charges the trigger team and sets last_triggered_at', async () => {
      const { webhookId, secret } = await hook();
      const before = await balanceOf(teamId);
      expect((await triggerRow(webhookId)).last_triggered_at).toBeNull();
      const started = Date.now();
      const res = await trigger(webhookId, { secret, payload: {} });
      const runId = res.json().runId as string;
      expect(await balanceOf(teamId)).toBe(before - RUN_BASE_COST_MILLI);
      const ledger = await stack.db.selectFrom('credit_transactions').selectAll().where('reference', '=', `run:${runId}`).executeTakeFirstOrThrow();
      expect(ledger).toMatchObject({ team_id: teamId, amount_milli: -RUN_BASE_COST_MILLI, reason: 'run' });
      const last = (await triggerRow(webhookId)).last_triggered_at;
      expect(last!.getTime()).toBeGreaterThanOrEqual(started - 1000);
      const viewed = await stack.app.inject({ method: 'GET', url: `/api/webhook-triggers/by-document/${res.json().documentId}`, headers: { authorization: `Bearer ${ownerJwt}` } });
      expect(viewed.json().lastTriggeredAt).toBe(last!.toISOString());
    });

    it('last_triggered_at is kept to the second: a call within a second of it leaves the row, a later one moves it', async () => {
      const { webhookId, secret } = await hook();
      expect((await trigger(webhookId, { secret, payload: {} })).statusCode).toBe(200);
      const first = (await triggerRow(webhookId)).last_triggered_at!;
      // Within the second: unchanged (no update per call on the trigger's row).
      await stack.db.updateTable('webhook_triggers').set({ last_triggered_at: sql<Date>`now()` }).where('id', '=', webhookId).execute();
      const written = (await triggerRow(webhookId)).last_triggered_at!;
      expect((await trigger(webhookId, { secret, payload: {} })).statusCode).toBe(200);
      expect((await triggerRow(webhookId)).last_triggered_at).toEqual(written);
      // Older than a second: the next call writes it, once this process's own last write is a second old
      // too (each process sends the UPDATE at most once a second per trigger, not once a call).
      await stack.db.updateTable('webhook_triggers').set({ last_triggered_at: sql<Date>`now() - interval '5 seconds'` }).where('id', '=', webhookId).execute();
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect((await trigger(webhookId, { secret, payload: {} })).statusCode).toBe(200);
      const moved = (await triggerRow(webhookId)).last_triggered_at!;
      expect(moved.getTime()).toBeGreaterThanOrEqual(first.getTime());
      expect(Date.now() - moved.getTime()).toBeLessThan(5_000);
    });

    it('calls within a second send no UPDATE of the trigger row at all: one statement, not one per call', async () => {
      const { webhookId, secret } = await hook();
      // A statement-level trigger fires for every UPDATE statement on the table, even one that matches no row.
      await sql`CREATE TABLE test_trigger_updates (n int)`.execute(stack.db);
      await sql`CREATE FUNCTION test_count_trigger_updates() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO test_trigger_updates VALUES (1); RETURN NULL; END $$`.execute(stack.db);
      await sql`CREATE TRIGGER test_count_trigger_updates AFTER UPDATE ON webhook_triggers FOR EACH STATEMENT EXECUTE FUNCTION test_count_trigger_updates()`.execute(stack.db);
      try {
        const started = Date.now();
        for (let call = 0; call < 5; call++) expect((await trigger(webhookId, { secret, payload: {} })).statusCode).toBe(200);
        const elapsed = Date.now() - started;
        const statements = Number((await sql<{ n: string }>`SELECT count(*) AS n FROM test_trigger_updates`.execute(stack.db)).rows[0]!.n);
        // One for the first call, then at most one per second that passed (one in all when the calls took under a second).
        expect(statements).toBeGreaterThanOrEqual(1);
        expect(statements).toBeLessThanOrEqual(1 + Math.floor(elapsed / 1_000));
        expect((await triggerRow(webhookId)).last_triggered_at).not.toBeNull();
      } finally {
        await sql`DROP TRIGGER test_count_trigger_updates ON webhook_triggers`.execute(stack.db);
        await sql`DROP FUNCTION test_count_trigger_updates()`.execute(stack.db);
        await sql`DROP TABLE test_trigger_updates`.execute(stack.db);
      }
    });

    it('rotating invalidates the old secret at once', async () => {
      const { webhookId, secret: old, documentId } = await hook();
      const rotated = await stack.app.inject({ method: 'POST', url: `/api/webhook-triggers/by-document/${documentId}/rotate-secret`, headers: { authorization: `Bearer ${ownerJwt}` } });
      const fresh = rotated.json().secret as string;
      const refused = await trigger(webhookId, { secret: old, payload: {} });
      expect([refused.statusCode, refused.body]).toEqual([404, NOT_FOUND_BODY]);
      expect((await trigger(webhookId, { secret: fresh, payload: {} })).statusCode).toBe(200);
    });

    it('a republish re-points the trigger: the call runs the newest deployment', async () => {
      const first = await hook();
      const newer = await publishDirect(stack.db, webhookGraph, { teamId, publishedBy: ownerId, documentId: first.documentId, version: [1, 1] });
      const res = await trigger(first.webhookId, { secret: first.secret, payload: {} });
      const run = await stack.db.selectFrom('runs').select('deployment_id').where('id', '=', res.json().runId).executeTakeFirstOrThrow();
      expect(run.deployment_id).toBe(newer.deploymentId);
    });
  });

  describe('every refusal of §4.2 rule 3 is the same 404, and creates nothing', () => {
    it.each([
      ['an unknown id', async (h: Hook) => trigger(randomUUID(), { secret: h.secret, payload: {} })],
      ['a malformed id', async (h: Hook) => trigger('not-a-uuid', { secret: h.secret, payload: {} })],
      ['an extra path segment', async (h: Hook) => trigger(`${h.webhookId}/run`, { secret: h.secret, payload: {} })],
      ['GET instead of POST', async (h: Hook) => stack.app.inject({ method: 'GET', url: `/api/webhook-triggers/${h.webhookId}`, headers: { authorization: `Bearer ${h.secret}` } })],
      ['a wrong secret', async (h: Hook) => trigger(h.webhookId, { secret: `${h.secret.slice(0, -1)}x`, payload: {} })],
      ['a wrong secret in X-Webhook-Secret', async (h: Hook) => trigger(h.webhookId, { secret: 'wht_nope', via: 'header', payload: {} })],
      ['no secret header', async (h: Hook) => trigger(h.webhookId, { payload: {} })],
      ['a non-bearer Authorization', async (h: Hook) => stack.app.inject({
        method: 'POST', url: `/api/webhook-triggers/${h.webhookId}`, headers: { authorization: `Basic ${h.secret}` }, payload: {},
      })],
      ['the hash presented as the secret', async (h: Hook) => trigger(h.webhookId, { secret: (await triggerRow(h.webhookId)).secret_hash!, payload: {} })],
      ['a disabled trigger', async (h: Hook) => {
        await stack.db.updateTable('webhook_triggers').set({ enabled: false }).where('id', '=', h.webhookId).execute();
        return trigger(h.webhookId, { secret: h.secret, payload: {} });
      }],
      ['a deleted deployment', async (h: Hook) => {
        await stack.db.updateTable('deployments').set({ deleted_at: new Date() }).where('id', '=', h.deploymentId).execute();
        return trigger(h.webhookId, { secret: h.secret, payload: {} });
      }],
      ['a deleted document', async (h: Hook) => {
        await stack.db.updateTable('documents').set({ deleted_at: new Date() }).where('id', '=', h.documentId).execute();
        return trigger(h.webhookId, { secret: h.secret, payload: {} });
      }],
    ])('%s', async (_name, attempt) => {
      const h = await hook();
      const before = await runCount();
      const res = await attempt(h);
      expect(res.statusCode).toBe(404);
      expect(res.body).toBe(NOT_FOUND_BODY);
      expect(res.headers['retry-after']).toBeUndefined();
      expect(await runCount()).toBe(before);
      expect((await triggerRow(h.webhookId)).last_triggered_at).toBeNull();
    });

    it('a trigger whose secret was never generated refuses everything, the empty secret included', async () => {
      const { documentId } = await publishDirect(stack.db, webhookGraph, { teamId, publishedBy: ownerId });
      const row = await stack.db.selectFrom('webhook_triggers').select('id').where('document_id', '=', documentId).executeTakeFirstOrThrow();
      const before = await runCount();
      for (const res of [await trigger(row.id, { payload: {} }), await trigger(row.id, { secret: '', via: 'header', payload: {} }), await trigger(row.id, { secret: 'wht_', payload: {} })]) {
        expect([res.statusCode, res.body]).toEqual([404, NOT_FOUND_BODY]);
      }
      expect(await runCount()).toBe(before);
    });

    it('refusals take about the same time as a wrong secret (medians of 30, interleaved)', async () => {
      const h = await hook();
      const attempts = {
        wrongSecret: () => trigger(h.webhookId, { secret: 'wht_wrong', payload: {} }),
        unknownId: () => trigger(randomUUID(), { secret: h.secret, payload: {} }),
        malformedId: () => trigger('not-a-uuid', { secret: h.secret, payload: {} }),
        noSecret: () => trigger(h.webhookId, { payload: {} }),
      };
      const timings = Object.fromEntries(Object.keys(attempts).map((k) => [k, [] as number[]])) as Record<keyof typeof attempts, number[]>;
      for (let i = 0; i < 30; i++) {
        for (const [name, attempt] of Object.entries(attempts) as Array<[keyof typeof attempts, () => Promise<unknown>]>) {
          const start = performance.now();
          await attempt();
          timings[name].push(performance.now() - start);
        }
      }
      const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
      // Measured ratios sit near 1; skipping the database query makes a path about 3x faster.
      // A factor of 2 catches that without flaking on a busy machine (the calls are interleaved).
      for (const name of ['unknownId', 'malformedId', 'noSecret'] as const) {
        const ratio = median(timings[name]) / median(timings.wrongSecret);
        expect(ratio, `${name}: ${ratio.toFixed(2)}`).toBeGreaterThan(1 / 2);
        expect(ratio, `${name}: ${ratio.toFixed(2)}`).toBeLessThan(2);
      }
    });
  });

  describe('other refusals', () => {
    it('402 insufficient_credits when the team has no credits: nothing charged, no run', async () => {
      const poorOwner = await make.user('poor');
      const poorTeam = await make.team(poorOwner.id);
      const h = await hook(webhookGraph, { id: poorTeam.id, ownerId: poorOwner.id, jwt: await make.jwt(poorOwner.id) });
      const before = await runCount();
      const res = await trigger(h.webhookId, { secret: h.secret, payload: {} });
      expect(res.statusCode).toBe(402);
      expect(res.json()).toEqual({ code: 'insufficient_credits', message: 'The team does not have enough credits for this run' });
      expect(await runCount()).toBe(before);
      expect(await stack.db.selectFrom('credit_transactions').select('id').where('team_id', '=', poorTeam.id).execute()).toEqual([]);
      expect((await triggerRow(h.webhookId)).last_triggered_at).toBeNull();
    });

    it('403 webhook_team_missing when the trigger has no team (unset or deleted); republishing repairs it', async () => {
      const h = await hook();
      const message = 'This webhook has no team to charge; republish the document to bind the webhook to its team';
      const before = await runCount();
      await stack.db.updateTable('webhook_triggers').set({ team_id: null }).where('id', '=', h.webhookId).execute();
      const unset = await trigger(h.webhookId, { secret: h.secret, payload: {} });
      expect([unset.statusCode, unset.json()]).toEqual([403, { code: 'webhook_team_missing', message }]);

      const otherOwner = await make.user('leaving');
      const doomedTeam = await make.team(otherOwner.id);
      await grantCredits(stack.db, { teamId: doomedTeam.id, amountMilli: 1000 });
      await stack.db.updateTable('webhook_triggers').set({ team_id: doomedTeam.id }).where('id', '=', h.webhookId).execute();
      await stack.db.updateTable('teams').set({ deleted_at: new Date() }).where('id', '=', doomedTeam.id).execute();
      const deleted = await trigger(h.webhookId, { secret: h.secret, payload: {} });
      expect([deleted.statusCode, deleted.json()]).toEqual([403, { code: 'webhook_team_missing', message }]);
      expect(await runCount()).toBe(before);
      expect(await balanceOf(doomedTeam.id)).toBe(1000);

      await publishDirect(stack.db, webhookGraph, { teamId, publishedBy: ownerId, documentId: h.documentId, version: [1, 1] });
      expect((await triggerRow(h.webhookId)).team_id).toBe(teamId);
      expect((await trigger(h.webhookId, { secret: h.secret, payload: {} })).statusCode).toBe(200);
    });

    it('413 request_body_too_large for a 5 MiB body: nothing created', async () => {
      const h = await hook();
      const before = await runCount();
      const res = await trigger(h.webhookId, { secret: h.secret, payload: { message: 'x'.repeat(5 * 1024 * 1024) } });
      expect(res.statusCode).toBe(413);
      expect(res.json()).toMatchObject({ code: 'request_body_too_large', message: expect.stringMatching(/the limit is 4194304 bytes$/), limit: 4_194_304 });
      expect(await runCount()).toBe(before);
      expect((await triggerRow(h.webhookId)).last_triggered_at).toBeNull();
    });

    it('the body cap follows run.input_limit', async () => {
      const h = await hook();
      await withSetting('run.input_limit', { maxBodyBytes: 1000 }, async () => {
        const res = await trigger(h.webhookId, { secret: h.secret, payload: { message: 'y'.repeat(2000) } });
        expect([res.statusCode, res.json().code]).toEqual([413, 'request_body_too_large']);
        expect((await trigger(h.webhookId, { secret: h.secret, payload: { message: 'short' } })).statusCode).toBe(200);
      });
    });

    describe('bad input: 400, no run, no last_triggered_at', () => {
      it.each([
        ['a missing required input', exampleGraph, {}, 'Input validation failed'],
        ['a mistyped input', exampleGraph, { name: 42 }, 'Input validation failed'],
        ['a JSON array body', webhookGraph, '[1, 2]', 'invalid_request'],
        ['a JSON string body', webhookGraph, '"hello"', 'invalid_request'],
        ['malformed JSON', webhookGraph, '{"message":', 'invalid_json'],
        ['too deep inputs', webhookGraph, { message: 'x', deep: JSON.parse(`${'{"a":'.repeat(33)}1${'}'.repeat(33)}`) }, 'input_structure_too_deep'],
      ])('%s', async (_name, graph, payload, code) => {
        const h = await hook(graph);
        const before = await runCount();
        const res = await trigger(h.webhookId, { secret: h.secret, payload });
        expect(res.statusCode, res.body).toBe(400);
        expect(res.json().code).toBe(code);
        expect(await runCount()).toBe(before);
        expect((await triggerRow(h.webhookId)).last_triggered_at).toBeNull();
      });

      it('Input validation failed lists the fields, in the webhook envelope', async () => {
        const h = await hook(exampleGraph);
        const res = await trigger(h.webhookId, { secret: h.secret, payload: { n: 'two' } });
        expect(res.json()).toEqual({
          code: 'Input validation failed', message: 'Input validation failed',
          details: [{ field: 'inputs.name', message: 'is required' }, { field: 'inputs.n', message: 'expected a number' }],
        });
      });

      it('an input limit error carries field, actual and limit', async () => {
        const h = await hook();
        await withSetting('run.input_limit', { maxFieldBytes: 50 }, async () => {
          const res = await trigger(h.webhookId, { secret: h.secret, payload: { message: 'z'.repeat(100) } });
          expect(res.statusCode).toBe(400);
          expect(res.json()).toMatchObject({ code: 'input_field_too_large', field: 'inputs.message', actual: 102, limit: 50 });
        });
      });
    });

    it('429 rate_limited over webhook_trigger.rate_limit, with Retry-After; wrong secrets do not count', async () => {
      const h = await hook();
      const other = await hook();
      await withSetting('webhook_trigger.rate_limit', { perMinute: 2 }, async () => {
        for (let i = 0; i < 3; i++) {
          expect((await trigger(h.webhookId, { secret: 'wht_stranger', payload: {} })).body).toBe(NOT_FOUND_BODY);
        }
        const first = await trigger(h.webhookId, { secret: h.secret, payload: {} });
        expect(first.statusCode, first.body).toBe(200);
        expect(first.headers['x-ratelimit-limit']).toBe('2');
        expect(first.headers['x-ratelimit-remaining']).toBe('1');
        expect((await trigger(h.webhookId, { secret: h.secret, via: 'header', payload: {} })).statusCode).toBe(200);
        const before = await runCount();
        const limited = await trigger(h.webhookId, { secret: h.secret, payload: {} });
        expect(limited.statusCode).toBe(429);
        expect(limited.json()).toEqual({
          code: 'rate_limited', message: expect.stringMatching(/^Too many calls to this webhook: the limit is 2 per minute; retry after \d+ seconds$/),
        });
        const retryAfter = Number(limited.headers['retry-after']);
        expect(retryAfter).toBeGreaterThanOrEqual(1);
        expect(retryAfter).toBeLessThanOrEqual(60);
        expect(limited.headers['x-ratelimit-remaining']).toBe('0');
        expect(await runCount()).toBe(before);
        // A stranger still gets the plain 404, never a 429 that would confirm the id.
        expect((await trigger(h.webhookId, { secret: 'wht_stranger', payload: {} })).body).toBe(NOT_FOUND_BODY);
        // Budgets are per webhook.
        expect((await trigger(other.webhookId, { secret: other.secret, payload: {} })).statusCode).toBe(200);
      });
      // The setting applies at once: back at the default of 60 the webhook has budget again.
      expect((await trigger(h.webhookId, { secret: h.secret, payload: {} })).statusCode).toBe(200);
    });
  });
});
