import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleGraph } from '../../shared/documents/example-graph.js';
import type { Graph } from '../../shared/documents/graph.js';
import { RUN_BASE_COST_MILLI } from '../harness/billing.js';
import { grantCredits } from '../../shared/billing/service.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

const triggerGraph: Graph = {
  blocks: [{ id: 'o', type: 'output', name: 'source', config: { value: '{{_trigger.source}}' } }],
  edges: [],
};

describe('POST /api/released-app/:deploymentId/run and /d/:documentId/run', () => {
  let stack: TestStack;
  let make: ReturnType<typeof credentialFactory>;
  let teamId: string;
  let ownerId: string;
  let apiKey: string;

  const publish = (graph: Graph, options: { visibility?: 'public' | 'private'; version?: [number, number]; documentId?: string; team?: string } = {}) =>
    publishDirect(stack.db, graph, { ...options, teamId: options.team ?? teamId, publishedBy: ownerId });
  const run = (url: string, token: string, body: unknown, query = '') =>
    stack.app.inject({ method: 'POST', url: `${url}${query}`, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, payload: JSON.stringify(body) });
  const runCount = async () => (await stack.db.selectFrom('runs').select('id').execute()).length;

  beforeAll(async () => {
    stack = await createTestStack();
    await stack.startWorker();
    make = credentialFactory(stack);
    const owner = await make.user('owner');
    ownerId = owner.id;
    teamId = (await make.team(owner.id)).id;
    await grantCredits(stack.db, { teamId, amountMilli: 100_000 });
    apiKey = (await make.apiKey(teamId, owner.id)).token;
  });
  afterAll(() => stack?.close());

  it('JSON mode returns the run result (2.20) and records the run', async () => {
    const { deploymentId, documentId } = await publish(exampleGraph);
    const res = await run(`/api/released-app/${deploymentId}/run`, apiKey, { inputs: { name: 'Ada', n: 21 }, stream: false });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ runId: res.headers['x-run-id'], documentId, status: 'completed', timedOut: false, duration: expect.any(Number) });
    expect(body.sessions.map((s: { blockId: string }) => s.blockId)).toEqual(['x', 'o']);
    expect(body.sessions.at(-1)).toMatchObject({ blockId: 'o', blockType: 'output', blockName: 'result', status: 'completed', output: { greeting: 'hello Ada', n: 42 } });
    expect(body.globalCtx).toBeUndefined();
    const row = await stack.db.selectFrom('runs').selectAll().where('id', '=', body.runId).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status: 'completed', deployment_id: deploymentId, trigger_source: 'api-key', team_id: teamId });
  });

  it('charges the run to the paying team and to the API key, with a ledger row', async () => {
    const { deploymentId } = await publish(triggerGraph);
    const key = await make.apiKey(teamId, ownerId);
    const balance = async () => (await stack.db.selectFrom('credit_balances').select('balance_milli').where('team_id', '=', teamId).executeTakeFirstOrThrow()).balance_milli;
    const before = await balance();
    const res = await run(`/api/released-app/${deploymentId}/run`, key.token, { stream: false });
    const runId = res.json().runId as string;
    expect(await balance()).toBe(before - RUN_BASE_COST_MILLI);
    const ledger = await stack.db.selectFrom('credit_transactions').selectAll().where('reference', '=', `run:${runId}`).executeTakeFirstOrThrow();
    expect(ledger).toMatchObject({ team_id: teamId, amount_milli: -RUN_BASE_COST_MILLI, reason: 'run' });
    const usage = await stack.db.selectFrom('api_keys').select('usage_credits').where('id', '=', key.id).executeTakeFirstOrThrow();
    expect(usage.usage_credits).toBe(RUN_BASE_COST_MILLI);
  });

  it('Idempotency-Key: a repeat returns the same run (charged once); another body is 409', async () => {
    const { deploymentId } = await publish(exampleGraph);
    const post = (body: object, key: string, token = apiKey) => stack.app.inject({
      method: 'POST', url: `/api/released-app/${deploymentId}/run`, payload: body,
      headers: { authorization: `Bearer ${token}`, 'idempotency-key': key },
    });
    const key = `k-${randomUUID()}`;
    const body = { inputs: { name: 'Ada' }, stream: false };
    const results = await Promise.all([post(body, key), post(body, key), post(body, key)]);
    const ids = new Set(results.map((r) => r.json().runId));
    expect(ids.size).toBe(1);
    const [runId] = [...ids] as string[];
    expect(results.every((r) => r.json().status === 'completed')).toBe(true);
    const charges = await stack.db.selectFrom('credit_transactions').select('id').where('reference', '=', `run:${runId}`).execute();
    expect(charges).toHaveLength(1);
    const before = await runCount();
    const conflict = await post({ inputs: { name: 'Grace' }, stream: false }, key);
    expect([conflict.statusCode, conflict.json().error]).toEqual([409, 'idempotency_key_reused']);
    expect(await runCount()).toBe(before);
    const otherKey = (await make.apiKey(teamId, ownerId)).token;
    expect((await post(body, key, otherKey)).json().runId).not.toBe(runId); // keys are scoped per credential
    const bad = await post(body, 'has spaces in it');
    expect([bad.statusCode, bad.json().error]).toEqual([400, 'invalid_idempotency_key']);
  });

  it('trace=full adds globalCtx', async () => {
    const { deploymentId } = await publish(exampleGraph);
    const res = await run(`/api/released-app/${deploymentId}/run`, apiKey, { inputs: { name: 'Ada' }, stream: false }, '?trace=full');
    expect(res.json().globalCtx).toMatchObject({ x: { greeting: 'hello Ada', n: 2 } });
  });

  it('streams NDJSON by default: run_start first, only streamed blocks, run_complete last', async () => {
    const { deploymentId } = await publish(exampleGraph);
    const res = await run(`/api/released-app/${deploymentId}/run`, apiKey, { inputs: { name: 'Ada' } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/x-ndjson/);
    const events = res.body.trim().split('\n').map((line) => JSON.parse(line));
    expect(events[0]).toEqual({ type: 'run_start', runId: res.headers['x-run-id'], documentId: expect.any(String) });
    expect(events.at(-1).type).toBe('run_complete');
    const blockIds = new Set(events.filter((e) => 'blockId' in e).map((e) => e.blockId));
    expect(blockIds).toEqual(new Set(['x', 'o'])); // the input blocks are not streamed
  });

  it('streams SSE with event, data and id lines', async () => {
    const { deploymentId } = await publish(exampleGraph);
    const res = await run(`/api/released-app/${deploymentId}/run`, apiKey, { inputs: { name: 'Ada' }, format: 'sse' });
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    const frames = res.body.trim().split('\n\n');
    expect(frames[0]).toMatch(/^id: \d+\nevent: run_start\ndata: \{"type":"run_start"/);
    expect(frames.at(-1)).toMatch(/\nevent: run_complete\n/);
  });

  it('the server sets _trigger, whatever the caller sends', async () => {
    const { deploymentId } = await publish(triggerGraph);
    const res = await run(`/api/released-app/${deploymentId}/run`, apiKey, { inputs: { _trigger: { source: 'forged' } }, _trigger: { source: 'forged' }, stream: false });
    expect(res.json().sessions[0].output).toBe('api');
  });

  it('version: exact, ^major, newest; a version that matches nothing is 404', async () => {
    const first = await publish(triggerGraph, { version: [1, 0] });
    await publish(triggerGraph, { version: [1, 3], documentId: first.documentId });
    const newest = await publish(triggerGraph, { version: [2, 0], documentId: first.documentId });
    const deploymentOf = async (version: string | undefined) => {
      const res = await run(`/api/released-app/d/${first.documentId}/run`, apiKey, { stream: false, ...(version ? { version } : {}) });
      if (res.statusCode !== 200) return res.statusCode;
      const row = await stack.db.selectFrom('runs').select('deployment_id').where('id', '=', res.json().runId).executeTakeFirstOrThrow();
      return row.deployment_id;
    };
    expect(await deploymentOf('1.0')).toBe(first.deploymentId);
    expect(await deploymentOf(undefined)).toBe(newest.deploymentId);
    const caret = await deploymentOf('^1.0');
    expect(caret).not.toBe(first.deploymentId);
    expect(caret).not.toBe(newest.deploymentId);
    expect(await deploymentOf('3.0')).toBe(404);
  });

  describe('bad input: the spec status, no run row, no workflow', () => {
    it.each([
      ['a missing required input', { inputs: {} }, 400, 'Input validation failed'],
      ['a mistyped input', { inputs: { name: 42 } }, 400, 'Input validation failed'],
      ['non-object inputs', { inputs: 'Ada' }, 400, 'invalid_request'],
      ['format=xml', { inputs: { name: 'Ada' }, format: 'xml' }, 400, 'invalid_request'],
      ['timeout=-1', { inputs: { name: 'Ada' }, timeout: -1 }, 400, 'invalid_request'],
      // A version that matches nothing, malformed or not, is 404 as on the gateway (spec §7.2).
      ['a malformed version', { inputs: { name: 'Ada' }, version: 'one' }, 404, 'Deployment not found'],
      ['a malformed ^version', { inputs: { name: 'Ada' }, version: '^x' }, 404, 'Deployment not found'],
    ])('%s', async (_name, body, status, error) => {
      const { deploymentId } = await publish(exampleGraph);
      const before = await runCount();
      const res = await run(`/api/released-app/${deploymentId}/run`, apiKey, body);
      expect([res.statusCode, res.json().error]).toEqual([status, error]);
      expect(await runCount()).toBe(before);
    });

    it('33-deep nesting is 400 input_structure_too_deep (32 is fine)', async () => {
      const { deploymentId } = await publish(exampleGraph);
      const nest = (depth: number): unknown => (depth === 1 ? 'leaf' : { a: nest(depth - 1) });
      const before = await runCount();
      const deep = await run(`/api/released-app/${deploymentId}/run`, apiKey, { inputs: { name: 'Ada', extra: nest(33) }, stream: false });
      expect(deep.statusCode).toBe(400);
      expect(deep.json()).toMatchObject({ error: 'input_structure_too_deep', field: 'inputs.extra', limit: 32 });
      expect(await runCount()).toBe(before);
      const fine = await run(`/api/released-app/${deploymentId}/run`, apiKey, { inputs: { name: 'Ada', extra: nest(32) }, stream: false });
      expect(fine.statusCode).toBe(200);
    });

    it('limits follow the run.input_limit setting: field size 400, body size 413', async () => {
      const { deploymentId } = await publish(exampleGraph);
      await upsertSiteSetting(stack.db, 'run.input_limit', { maxFieldBytes: 100, maxBodyBytes: 2000 });
      stack.deps.settings.invalidate();
      try {
        const before = await runCount();
        const field = await run(`/api/released-app/${deploymentId}/run`, apiKey, { inputs: { name: 'x'.repeat(200) } });
        expect(field.statusCode).toBe(400);
        expect(field.json()).toMatchObject({ error: 'input_field_too_large', field: 'inputs.name', limit: 100 });
        const body = await run(`/api/released-app/${deploymentId}/run`, apiKey, { inputs: { name: 'Ada', pad: 'y'.repeat(3000) } });
        expect([body.statusCode, body.json().error]).toEqual([413, 'request_body_too_large']);
        expect(await runCount()).toBe(before);
      } finally {
        await stack.db.deleteFrom('site_settings').where('key', '=', 'run.input_limit').execute();
        stack.deps.settings.invalidate();
      }
    });

    it('a response over run.response_limit: 413 in JSON mode, a final run_error when streaming', async () => {
      const { deploymentId } = await publish(exampleGraph);
      await upsertSiteSetting(stack.db, 'run.response_limit', { maxBytes: 300 });
      stack.deps.settings.invalidate();
      try {
        const json = await run(`/api/released-app/${deploymentId}/run`, apiKey, { inputs: { name: 'A'.repeat(400) }, stream: false });
        expect(json.statusCode).toBe(413);
        expect(json.json()).toMatchObject({ runId: expect.any(String), error: 'response_too_large', limitBytes: 300, executionStatus: 'response_too_large', actualBytes: expect.any(Number) });
        expect(json.json().actualBytes).toBeGreaterThan(300);
        const streamed = await run(`/api/released-app/${deploymentId}/run`, apiKey, { inputs: { name: 'A'.repeat(400) } });
        expect(streamed.statusCode).toBe(200);
        const last = JSON.parse(streamed.body.trim().split('\n').at(-1)!);
        expect(last).toMatchObject({ type: 'run_error', error: 'response_too_large', executionStatus: 'response_too_large' });
        expect(streamed.body).not.toContain('"type":"run_complete"');
      } finally {
        await stack.db.deleteFrom('site_settings').where('key', '=', 'run.response_limit').execute();
        stack.deps.settings.invalidate();
      }
    });

    it('Input validation failed lists the fields', async () => {
      const { deploymentId } = await publish(exampleGraph);
      const res = await run(`/api/released-app/${deploymentId}/run`, apiKey, { inputs: { n: 'two' } });
      expect(res.json().details).toEqual([{ field: 'inputs.name', message: 'is required' }, { field: 'inputs.n', message: 'expected a number' }]);
    });

    it('a bad credential is 401 whether the deployment exists or not: nothing to probe', async () => {
      const { deploymentId, documentId } = await publish(triggerGraph);
      // A revoked key (looked up and not found) and one with a broken checksum (refused before any query).
      const revoked = await make.apiKey(teamId, ownerId);
      await stack.db.updateTable('api_keys').set({ deleted_at: new Date() }).where('id', '=', revoked.id).execute();
      const garbled = apiKey.replace(/.$/, (last) => (last === 'A' ? 'B' : 'A'));
      const before = await runCount();
      for (const token of [revoked.token, garbled]) {
        for (const url of [`/api/released-app/${deploymentId}/run`, `/api/released-app/${randomUUID()}/run`, `/api/released-app/d/${documentId}/run`]) {
          const res = await run(url, token, { stream: false });
          expect([url, res.statusCode]).toEqual([url, 401]);
        }
      }
      // The credential comes first even before the path's id is validated: 400 for a valid key, 401 for a bad one.
      expect([(await run('/api/released-app/not-a-uuid/run', apiKey, {})).statusCode, (await run('/api/released-app/not-a-uuid/run', revoked.token, {})).statusCode]).toEqual([400, 401]);
      expect(await runCount()).toBe(before);
      // A valid key runs the deployment by either route.
      expect((await run(`/api/released-app/${deploymentId}/run`, apiKey, { stream: false })).json()).toMatchObject({ status: 'completed', documentId });
      expect((await run(`/api/released-app/d/${documentId}/run`, apiKey, { stream: false })).json()).toMatchObject({ status: 'completed', documentId });
    });

    it('an unknown deployment is 404 Deployment not found', async () => {
      const res = await run(`/api/released-app/${randomUUID()}/run`, apiKey, {});
      expect([res.statusCode, res.json().error]).toEqual([404, 'Deployment not found']);
    });

    it('a private app and a key of another team: 403; a public app: allowed', async () => {
      const stranger = await make.user('stranger');
      const strangerTeam = await make.team(stranger.id);
      await grantCredits(stack.db, { teamId: strangerTeam.id, amountMilli: 1000 });
      const strangerKey = (await make.apiKey(strangerTeam.id, stranger.id)).token;
      const privateApp = await publish(triggerGraph);
      const before = await runCount();
      const refused = await run(`/api/released-app/${privateApp.deploymentId}/run`, strangerKey, { stream: false });
      expect(refused.statusCode).toBe(403);
      expect(refused.json().error).toMatch(/^Permission denied: This is a private app/);
      expect(await runCount()).toBe(before);
      const publicApp = await publish(triggerGraph, { visibility: 'public' });
      expect((await run(`/api/released-app/${publicApp.deploymentId}/run`, strangerKey, { stream: false })).statusCode).toBe(200);
    });

    it('402 insufficient_credits when the paying team has no credits', async () => {
      const poor = await make.user('poor');
      const poorTeam = await make.team(poor.id);
      const poorKey = (await make.apiKey(poorTeam.id, poor.id)).token;
      const { deploymentId } = await publish(triggerGraph, { team: poorTeam.id });
      const before = await runCount();
      const res = await run(`/api/released-app/${deploymentId}/run`, poorKey, { stream: false });
      expect([res.statusCode, res.json().error]).toEqual([402, 'insufficient_credits']);
      expect(await runCount()).toBe(before);
      const ledger = await stack.db.selectFrom('credit_transactions').select('id').where('team_id', '=', poorTeam.id).execute();
      expect(ledger).toEqual([]);
    });

    it('403 API key credit limit exceeded when the key budget is spent', async () => {
      const key = await make.apiKey(teamId, ownerId);
      await stack.db.updateTable('api_keys').set({ limit_credits: 10, usage_credits: 10 }).where('id', '=', key.id).execute();
      const { deploymentId } = await publish(triggerGraph);
      const res = await run(`/api/released-app/${deploymentId}/run`, key.token, { stream: false });
      expect([res.statusCode, res.json().error]).toEqual([403, 'API key credit limit exceeded']);
    });

    it('a schedule token for another deployment: 403 Deployment ID mismatch', async () => {
      const { deploymentId } = await publish(triggerGraph);
      const token = await make.scheduleToken(teamId); // names a random deployment
      const res = await run(`/api/released-app/${deploymentId}/run`, token, { stream: false });
      expect([res.statusCode, res.json().error]).toEqual([403, 'Deployment ID mismatch']);
    });

    it('the document route takes API keys only, with the exact 401 text', async () => {
      const { documentId } = await publish(triggerGraph);
      const res = await run(`/api/released-app/d/${documentId}/run`, await make.jwt(ownerId), {});
      expect([res.statusCode, res.json().error]).toEqual([401, 'Unauthorized: Document ID route only supports API key authentication']);
      expect((await run(`/api/released-app/d/${documentId}/run`, apiKey, { stream: false })).statusCode).toBe(200);
    });
  });
});
