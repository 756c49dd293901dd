import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Graph } from '../../shared/documents/graph.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { startFakeLlm, type FakeLlm } from '../app-runs/llm-server.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { until } from '../harness/until.js';

// Retrying a run (CONTRACTS.md "Long runs"): a new run of the same deployment with the same inputs;
// from the failed block the completed blocks are reused (streamed with reused: true; the llm is not
// called again), from the start everything runs again.

type Json = Record<string, unknown>;

describe('retrying a run', () => {
  let stack: TestStack;
  let llm: FakeLlm;
  let target: http.Server;
  let targetPort = 0;
  let teamId: string;
  let apiKey: string;
  let ownerJwt: string;
  let foreignKey: string;

  beforeAll(async () => {
    llm = await startFakeLlm({ text: 'Dear customer, thanks.', delayMs: 1 });
    target = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"sent":true}'));
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    targetPort = (target.address() as AddressInfo).port;
    stack = await createTestStack({ LLM_BASE_URL: llm.url, LLM_API_KEY: 'sk-test' });
    await stack.startWorker();
    const make = credentialFactory(stack);
    const tenant = await make.fundedTenant(1_000_000);
    teamId = tenant.team.id;
    apiKey = tenant.apiKey;
    ownerJwt = await make.jwt(tenant.owner.id);
    foreignKey = (await make.fundedTenant()).apiKey;
  });
  afterAll(async () => {
    await stack?.close();
    await llm?.close();
    target?.close();
  });

  const draftAndSend = (): Graph => ({
    blocks: [
      { id: 'q', type: 'input', name: 'q', config: { valueType: 'string', required: true } },
      { id: 'draft', type: 'llm', name: 'draft', config: { model: 'test-model', prompt: 'Reply to {{q}}' } },
      { id: 'send', type: 'http', name: 'send', config: { method: 'POST', url: `http://127.0.0.1:${targetPort}/send`, body: '{{draft.text}}' } },
      { id: 'o', type: 'output', name: 'o', config: { value: '={ "sent": $send.body.sent }' } },
    ],
    edges: [{ from: 'q', to: 'draft' }, { from: 'draft', to: 'send' }, { from: 'send', to: 'o' }],
  });
  const allow = async (hosts: string[]) => {
    await upsertSiteSetting(stack.db, 'http_block.allow_hosts', hosts);
    stack.deps.settings.invalidate();
  };
  const runJson = async (deploymentId: string) => {
    const res = await stack.app.inject({ method: 'POST', url: `/api/released-app/${deploymentId}/run`, headers: { authorization: `Bearer ${apiKey}` }, payload: { inputs: { q: 'Ada' }, stream: false } });
    return res.json() as Json & { runId: string; status: string };
  };
  const retry = (runId: string, payload: Json = {}, key = apiKey) =>
    stack.app.inject({ method: 'POST', url: `/api/runs/${runId}/retry`, headers: { authorization: `Bearer ${key}` }, payload });
  const settled = (runId: string) => until(async () => {
    const row = await stack.db.selectFrom('runs').selectAll().where('id', '=', runId).executeTakeFirstOrThrow();
    return row.status !== 'running' && row.status !== 'waiting' ? row : null;
  }, 20_000, `run ${runId} to end`);
  const events = async (runId: string) => (await stack.db.selectFrom('run_events').select(['type', 'payload']).where('run_id', '=', runId).orderBy('id').execute())
    .map((e): Json => ({ type: e.type, ...(e.payload as Json) }));
  const runCount = async () => (await stack.db.selectFrom('runs').select('id').where('team_id', '=', teamId).execute()).length;

  it('from the failed block: the llm output is reused (not called again), the failed http block runs again and the run completes', async () => {
    await allow([]);
    const { deploymentId } = await publishDirect(stack.db, draftAndSend(), { teamId });
    const failed = await runJson(deploymentId);
    expect(failed.status).toBe('failed');
    const llmCalls = llm.requests.length;

    await allow([`127.0.0.1:${targetPort}`]);
    const res = await retry(failed.runId);
    expect(res.statusCode).toBe(201);
    const { runId, retryOf } = res.json();
    expect(retryOf).toBe(failed.runId);
    expect(runId).not.toBe(failed.runId);
    const row = await settled(runId);
    expect(row.status).toBe('completed');
    expect(row.deployment_id).toBe(deploymentId);
    expect(row.inputs).toMatchObject({ q: 'Ada', _trigger: { retry_of: failed.runId } });
    expect(llm.requests.length).toBe(llmCalls);

    const log = await events(runId);
    const originalDraft = (await events(failed.runId)).find((e) => e.type === 'block_complete' && e.blockId === 'draft')!;
    expect(log.find((e) => e.type === 'block_complete' && e.blockId === 'draft')).toEqual({ ...originalDraft, reused: true });
    expect(log.find((e) => e.type === 'block_complete' && e.blockId === 'send')).not.toHaveProperty('reused');
    expect(log.at(-1)).toMatchObject({ type: 'run_complete' });
  });

  it('from the start: every block runs again', async () => {
    await allow([]);
    const { deploymentId } = await publishDirect(stack.db, draftAndSend(), { teamId });
    const failed = await runJson(deploymentId);
    expect(failed.status).toBe('failed');
    const llmCalls = llm.requests.length;
    await allow([`127.0.0.1:${targetPort}`]);
    const res = await retry(failed.runId, { from: 'start' }, ownerJwt);
    expect(res.statusCode).toBe(201);
    expect((await settled(res.json().runId)).status).toBe('completed');
    expect(llm.requests.length).toBe(llmCalls + 1);
    expect((await events(res.json().runId)).some((e) => e.reused === true)).toBe(false);
  });

  it('a cancelled run waiting for approval is retried from its approval; the drafted text is reused', async () => {
    const graph: Graph = {
      blocks: [
        { id: 'q', type: 'input', name: 'q', config: { valueType: 'string', required: true } },
        { id: 'draft', type: 'llm', name: 'draft', config: { model: 'test-model', prompt: 'Reply to {{q}}' } },
        { id: 'ok', type: 'approval', name: 'ok', config: { prompt: 'Send: {{draft.text}}' } },
      ],
      edges: [{ from: 'q', to: 'draft' }, { from: 'draft', to: 'ok' }],
    };
    const { deploymentId } = await publishDirect(stack.db, graph, { teamId });
    const waiting = await runJson(deploymentId);
    expect(waiting.status).toBe('waiting');
    const waitingRetry = await retry(waiting.runId);
    expect([waitingRetry.statusCode, waitingRetry.json().error]).toEqual([409, 'run_not_failed']);
    await stack.app.inject({ method: 'POST', url: `/api/runs/${waiting.runId}/cancel`, headers: { authorization: `Bearer ${apiKey}` } });
    expect((await settled(waiting.runId)).status).toBe('cancelled');
    const llmCalls = llm.requests.length;

    const res = await retry(waiting.runId);
    expect(res.statusCode).toBe(201);
    const { runId } = res.json();
    await until(async () => (await stack.db.selectFrom('runs').select('status').where('id', '=', runId).executeTakeFirstOrThrow()).status === 'waiting', 10_000, 'the retry to wait');
    expect(llm.requests.length).toBe(llmCalls);
    const decided = await stack.app.inject({ method: 'POST', url: `/api/runs/${runId}/approvals/ok`, headers: { authorization: `Bearer ${apiKey}` }, payload: { approved: true } });
    expect(decided.statusCode).toBe(200);
    expect((await settled(runId)).status).toBe('completed');
  });

  it('refusals change nothing: a completed run (409 run_not_failed), another team (404), a random run (404), a bad from (400)', async () => {
    const { deploymentId } = await publishDirect(stack.db, {
      blocks: [{ id: 'o', type: 'output', name: 'o', config: { value: 'hi' } }], edges: [],
    }, { teamId });
    const done = await runJson(deploymentId);
    expect(done.status).toBe('completed');
    const failed = await (async () => {
      await allow([]);
      return runJson((await publishDirect(stack.db, draftAndSend(), { teamId })).deploymentId);
    })();
    const before = await runCount();
    const completed = await retry(done.runId);
    expect([completed.statusCode, completed.json().error]).toEqual([409, 'run_not_failed']);
    const foreign = await retry(failed.runId, {}, foreignKey);
    expect([foreign.statusCode, foreign.json().error]).toEqual([404, 'Run not found']);
    expect((await retry('00000000-0000-4000-8000-000000000000')).statusCode).toBe(404);
    expect((await retry(failed.runId, { from: 'middle' })).statusCode).toBe(400);
    expect(await runCount()).toBe(before);
  });
});
