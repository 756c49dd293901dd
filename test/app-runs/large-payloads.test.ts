import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { resolveClaims, resolveIoRequest, storeClaim } from '../../activities/app-runs/claim-store.js';
import { sweepRunPayloads } from '../../activities/app-runs/payload-sweeper.js';
import type { Graph } from '../../shared/documents/graph.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { startFakeLlm, type FakeLlm } from './llm-server.js';

// Runs whose values exceed Temporal's payload limit (2 MB) within the spec's input limits (§8.1):
// large values travel through the workflow as claims on run_payloads (docs/app-runs.md "Large payloads").
const LLM_TEXT = 'z'.repeat(300_000);

describe('runs with large payloads (claim check)', () => {
  let stack: TestStack;
  let llm: FakeLlm;
  let target: http.Server;
  let targetPort = 0;
  let apiKey: string;
  let publish: (graph: Graph) => Promise<string>;

  // ~900 KB of JSON: an object whose `items` a transform reads a part of.
  const bigBody = { items: Array.from({ length: 9_000 }, (_, i) => ({ id: i, label: `item-${i}-${'x'.repeat(80)}` })), total: 9_000 };

  beforeAll(async () => {
    llm = await startFakeLlm({ text: LLM_TEXT, chunkSize: 50_000 });
    target = http.createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(bigBody));
    });
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    targetPort = (target.address() as AddressInfo).port;
    stack = await createTestStack({ LLM_BASE_URL: llm.url, LLM_API_KEY: 'sk-test' });
    await stack.startWorker();
    const { team, apiKey: key } = await credentialFactory(stack).fundedTenant();
    apiKey = key;
    publish = async (graph) => (await publishDirect(stack.db, graph, { teamId: team.id })).deploymentId;
    await upsertSiteSetting(stack.db, 'http_block.allow_hosts', [`127.0.0.1:${targetPort}`]);
    stack.deps.settings.invalidate();
  }, 60_000);
  afterAll(async () => {
    await stack?.close();
    await llm?.close();
    target?.close();
  });

  const post = (deploymentId: string, inputs: object, stream: boolean) => stack.app.inject({
    method: 'POST', url: `/api/released-app/${deploymentId}/run`,
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    payload: JSON.stringify({ inputs, stream }),
  });
  const streamRun = async (deploymentId: string, inputs: object) =>
    (await post(deploymentId, inputs, true)).body.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
  const payloadKeys = async (runId: string) =>
    (await stack.db.selectFrom('run_payloads').select('key').where('run_id', '=', runId).orderBy('key').execute()).map((r) => r.key);

  /** The largest event of the run's workflow history, as JSON with payloads decoded. */
  const largestHistoryEvent = async (runId: string) => {
    const history = await stack.deps.temporal.client.workflow.getHandle(workflowIds.appRun(runId)).fetchHistory();
    const sizes = (history.events ?? []).map((event) => JSON.stringify(event, (key, v: unknown) => (
      v instanceof Uint8Array ? Buffer.from(v).toString('utf8') : key === 'data' && typeof v === 'string' ? Buffer.from(v, 'base64').toString('utf8') : v)).length);
    return Math.max(...sizes);
  };

  it('a ~2.7 MB input (within §8.1) completes in JSON mode with the right result', async () => {
    const graph: Graph = {
      blocks: [
        ...['a', 'b', 'c', 'd'].map((name) => ({ id: name, type: 'input' as const, name, config: { valueType: 'array' } })),
        { id: 'o', type: 'output', name: 'count', config: { value: '=$count($a) + $count($b) + $count($c) + $count($d)' } },
      ],
      edges: ['a', 'b', 'c', 'd'].map((name) => ({ from: name, to: 'o' })),
    };
    // ~1 MB of text that tokenizes quickly (a 1 MB run of one letter is a pathological case for
    // the API's tokenizer check in shared/app-runs/limits.ts, unrelated to the workflow).
    const numbers = Array.from({ length: 45_000 }, (_, i) => 1234567890.123456 + i);
    const inputs = { a: ['hello '.repeat(166_000)], b: numbers, c: numbers, d: [1] };
    expect(JSON.stringify(inputs).length).toBeGreaterThan(2_500_000);
    const started = Date.now();
    const res = await post(await publish(graph), inputs, false);
    expect(res.statusCode, res.body.slice(0, 500)).toBe(200);
    const body = res.json();
    expect(body.status).toBe('completed');
    expect(body.sessions.at(-1)).toMatchObject({ blockId: 'o', output: 90_002 });
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(await payloadKeys(body.runId)).toEqual(['input:a', 'input:b', 'input:c']);
    expect(await largestHistoryEvent(body.runId)).toBeLessThan(100_000);
  }, 60_000);

  it('an http block with a ~900 KB body feeds a transform; block_complete carries the full body', async () => {
    const graph: Graph = {
      blocks: [
        { id: 'call', type: 'http', name: 'call', config: { method: 'GET', url: `http://127.0.0.1:${targetPort}/big` } },
        { id: 'pick', type: 'transform', name: 'pick', config: { expression: 'call.body.items[id = 4321].label' } },
      ],
      edges: [{ from: 'call', to: 'pick' }],
    };
    expect(JSON.stringify(bigBody).length).toBeGreaterThan(800_000);
    const events = await streamRun(await publish(graph), {});
    expect(events.at(-1), JSON.stringify(events.at(-1)).slice(0, 500)).toMatchObject({ type: 'run_complete' });
    const httpDone = events.find((e) => e.type === 'block_complete' && e.blockId === 'call')!;
    expect((httpDone.output as { status: number; body: unknown })).toMatchObject({ status: 200, body: bigBody });
    const picked = events.find((e) => e.type === 'block_complete' && e.blockId === 'pick')!;
    expect(picked.output).toBe(`item-4321-${'x'.repeat(80)}`);
    const runId = events[0]!.runId as string;
    expect(await payloadKeys(runId)).toEqual(['output:call']);
    expect(await largestHistoryEvent(runId)).toBeLessThan(100_000);
  }, 60_000);

  it('an llm block with a 300 KB text feeds an output; the output is the full text and history stays small', async () => {
    const graph: Graph = {
      blocks: [
        { id: 'ask', type: 'llm', name: 'ask', config: { model: 'test-model', prompt: 'write a lot' } },
        { id: 'o', type: 'output', name: 'answer', config: { value: '{{ask.text}}' } },
      ],
      edges: [{ from: 'ask', to: 'o' }],
    };
    const res = await post(await publish(graph), {}, false);
    expect(res.statusCode, res.body.slice(0, 500)).toBe(200);
    const body = res.json();
    expect(body.status).toBe('completed');
    expect(body.sessions.at(-1).output).toBe(LLM_TEXT);
    expect(await payloadKeys(body.runId)).toEqual(['output:ask', 'output:o']);
    expect(await largestHistoryEvent(body.runId)).toBeLessThan(100_000);
  }, 60_000);

  it('a value that grows large in workflow code is claimed; trace=full truncates it as before', async () => {
    const graph: Graph = {
      blocks: [
        { id: 'n', type: 'input', name: 'n', config: { valueType: 'number' } },
        { id: 'grow', type: 'transform', name: 'grow', config: { expression: '$pad("", n, "abcdefghij")' } },
        { id: 'o', type: 'output', name: 'len', config: { value: '=$length(grow)' } },
      ],
      edges: [{ from: 'n', to: 'grow' }, { from: 'grow', to: 'o' }],
    };
    const res = await stack.app.inject({
      method: 'POST', url: `/api/released-app/${await publish(graph)}/run?trace=full`,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ inputs: { n: 200_000 }, stream: false }),
    });
    expect(res.statusCode, res.body.slice(0, 500)).toBe(200);
    const body = res.json();
    expect(body.status).toBe('completed');
    expect(body.sessions.find((s: { blockId: string }) => s.blockId === 'grow').output).toBe('abcdefghij'.repeat(20_000));
    expect(body.sessions.at(-1).output).toBe(200_000);
    expect(body.globalCtx.grow).toEqual({ __truncated: true, originalBytes: 200_000, preview: 'abcdefghij'.repeat(103).slice(0, 1024) });
    expect(body.globalCtx.o).toBe(200_000);
    expect(await payloadKeys(body.runId)).toEqual(['output:grow']);
    expect(await largestHistoryEvent(body.runId)).toBeLessThan(100_000);
  }, 60_000);

  it('the sweeper deletes the payloads of runs that ended over an hour ago and keeps the rest', async () => {
    const graph: Graph = {
      blocks: [
        { id: 'a', type: 'input', name: 'a', config: { valueType: 'string' } },
        { id: 'o', type: 'output', name: 'o', config: { value: '=$length($a)' } },
      ],
      edges: [{ from: 'a', to: 'o' }],
    };
    const deploymentId = await publish(graph);
    const runOnce = async () => {
      const res = await post(deploymentId, { a: 'x'.repeat(100_000) }, false);
      expect(res.json()).toMatchObject({ status: 'completed', sessions: [{ blockId: 'o', output: 100_000 }] });
      return res.json().runId as string;
    };
    const [old, recent] = [await runOnce(), await runOnce()];
    expect(await payloadKeys(old)).toEqual(['input:a']);
    await stack.db.updateTable('runs').set({ finished_at: sql<Date>`now() - interval '61 minutes'` }).where('id', '=', old).execute();

    expect(await sweepRunPayloads(stack.db)).toBeGreaterThanOrEqual(1);
    expect(await payloadKeys(old)).toEqual([]);
    expect(await payloadKeys(recent)).toEqual(['input:a']);
    // The run's stored result does not depend on them.
    expect((await stack.db.selectFrom('runs').select('result').where('id', '=', old).executeTakeFirstOrThrow()).result).toMatchObject({ sessions: [{ blockId: 'o', output: 100_000 }] });
  }, 60_000);

  it('a normal small run writes no run_payloads rows', async () => {
    const graph: Graph = {
      blocks: [
        { id: 'x', type: 'input', name: 'x', config: { valueType: 'string' } },
        { id: 'o', type: 'output', name: 'o', config: { value: 'hello {{x}}' } },
      ],
      edges: [{ from: 'x', to: 'o' }],
    };
    const res = await post(await publish(graph), { x: 'Ada' }, false);
    expect(res.json()).toMatchObject({ status: 'completed', sessions: [{ blockId: 'o', output: 'hello Ada' }] });
    expect(await payloadKeys(res.json().runId)).toEqual([]);
  }, 60_000);

  it('storeClaim / resolveClaims: small values stay inline, large ones round-trip (idempotent upsert)', async () => {
    const graph: Graph = { blocks: [{ id: 'o', type: 'output', name: 'o', config: { value: 'ok' } }], edges: [] };
    const runId = (await post(await publish(graph), {}, false)).json().runId as string;
    expect(await storeClaim(stack.db, runId, 'output:small', { a: 1 })).toEqual({ a: 1 });
    const big = { text: 'é'.repeat(40_000) };
    const claim = await storeClaim(stack.db, runId, 'output:big', big);
    expect(claim).toEqual({ $claim: 'output:big', bytes: Buffer.byteLength(JSON.stringify(big)) });
    expect(await storeClaim(stack.db, runId, 'output:big', big)).toEqual(claim);
    expect(await payloadKeys(runId)).toEqual(['output:big']);
    const nested = { list: [claim, 2], same: claim, plain: 'x' };
    expect(await resolveClaims(stack.db, runId, nested)).toEqual({ list: [big, 2], same: big, plain: 'x' });
    expect(await resolveClaims(stack.db, runId, nested, () => 'mapped')).toEqual({ list: ['mapped', 2], same: 'mapped', plain: 'x' });
    await expect(resolveClaims(stack.db, runId, { $claim: 'output:missing', bytes: 1 })).rejects.toThrow(/not found/);
    // A claimed I/O request comes back as the activity's flat input.
    const call = { kind: 'llm', request: { model: 'm', prompt: 'p'.repeat(70_000) } };
    const requestClaim = await storeClaim(stack.db, runId, 'request:ask', call);
    expect(await resolveIoRequest(stack.db, { runId, blockId: 'ask', claimedRequest: requestClaim as never }))
      .toEqual({ runId, blockId: 'ask', model: 'm', prompt: call.request.prompt });
  }, 60_000);
});
