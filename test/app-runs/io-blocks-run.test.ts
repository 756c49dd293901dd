import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Graph } from '../../shared/documents/graph.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { startFakeLlm, type FakeLlm } from './llm-server.js';

// llm and http blocks end to end: API → workflow → activities → local servers that speak the real
// protocols over 127.0.0.1 (an OpenAI-compatible SSE stream, and plain HTTP behind the SSRF guard).
describe('runs with llm and http blocks', () => {
  let stack: TestStack;
  let llm: FakeLlm;
  let target: http.Server;
  let targetHits = 0;
  let targetPort = 0;
  let apiKey: string;
  let publish: (graph: Graph) => Promise<string>;

  beforeAll(async () => {
    llm = await startFakeLlm({ text: 'The quick brown fox jumps over the lazy dog.', delayMs: 2 });
    target = http.createServer((req, res) => {
      targetHits += 1;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ path: req.url, method: req.method }));
    });
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    targetPort = (target.address() as AddressInfo).port;

    stack = await createTestStack({ LLM_BASE_URL: llm.url, LLM_API_KEY: 'sk-test' });
    await stack.startWorker();
    const { team, apiKey: key } = await credentialFactory(stack).fundedTenant();
    apiKey = key;
    publish = async (graph) => (await publishDirect(stack.db, graph, { teamId: team.id })).deploymentId;
  });
  afterAll(async () => {
    await stack?.close();
    await llm?.close();
    target?.close();
  });

  const streamRun = async (deploymentId: string, inputs: object) => {
    const res = await stack.app.inject({ method: 'POST', url: `/api/released-app/${deploymentId}/run`, headers: { authorization: `Bearer ${apiKey}` }, payload: { inputs } });
    return res.body.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
  };

  it('streams llm deltas as batched block_chunk events, then the http result, in one run', async () => {
    await upsertSiteSetting(stack.db, 'http_block.allow_hosts', [`127.0.0.1:${targetPort}`]);
    stack.deps.settings.invalidate();
    const deploymentId = await publish({
      blocks: [
        { id: 'q', type: 'input', name: 'topic', config: { valueType: 'string', required: true } },
        { id: 'ask', type: 'llm', name: 'ask', config: { model: 'test-model', prompt: 'Write about {{q}}', system: 'Be short', temperature: 0.3 } },
        { id: 'call', type: 'http', name: 'call', config: { method: 'GET', url: `http://127.0.0.1:${targetPort}/lookup/{{q}}` } },
        { id: 'o', type: 'output', name: 'o', config: { value: "={ 'text': $ask.text, 'path': $call.body.path }" } },
      ],
      edges: [{ from: 'q', to: 'ask' }, { from: 'q', to: 'call' }, { from: 'ask', to: 'o' }, { from: 'call', to: 'o' }],
    });
    const events = await streamRun(deploymentId, { topic: 'foxes' });
    expect(events.at(-1)!.type).toBe('run_complete');

    const chunks = events.filter((e) => e.type === 'block_chunk');
    expect(chunks.length).toBeGreaterThan(0);
    expect(chunks.map((c) => c.delta).join('')).toBe('The quick brown fox jumps over the lazy dog.');
    const llmDone = events.find((e) => e.type === 'block_complete' && e.blockId === 'ask')!;
    expect(llmDone.output).toMatchObject({ text: 'The quick brown fox jumps over the lazy dog.' });
    expect(events.indexOf(llmDone)).toBeGreaterThan(events.indexOf(chunks.at(-1)!));
    const httpDone = events.find((e) => e.type === 'block_complete' && e.blockId === 'call')!;
    expect(httpDone.output).toMatchObject({ status: 200, body: { path: '/lookup/foxes', method: 'GET' } });
    expect((events.at(-1)!.sessions as Array<{ blockId: string; output: unknown }>).at(-1)!.output)
      .toEqual({ text: 'The quick brown fox jumps over the lazy dog.', path: '/lookup/foxes' });

    const request = llm.requests.at(-1)!;
    expect(request.body).toMatchObject({ model: 'test-model', stream: true, temperature: 0.3 });
    expect(request.body.messages).toEqual([{ role: 'system', content: 'Be short' }, { role: 'user', content: 'Write about foxes' }]);
  });

  it('an http block pointed at 127.0.0.1 without an allow-list entry is refused, and the target sees nothing', async () => {
    await upsertSiteSetting(stack.db, 'http_block.allow_hosts', []);
    stack.deps.settings.invalidate();
    const deploymentId = await publish({
      blocks: [{ id: 'call', type: 'http', name: 'call', config: { method: 'GET', url: `http://127.0.0.1:${targetPort}/secret` } }],
      edges: [],
    });
    const hitsBefore = targetHits;
    const events = await streamRun(deploymentId, {});
    expect(events.map((e) => e.type)).toEqual(['run_start', 'block_start', 'block_error', 'run_error']);
    expect(events[2]!.error).toMatch(/refused|not allowed|blocked/i);
    expect(targetHits).toBe(hitsBefore);
  });
});
