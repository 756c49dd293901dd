import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { startFakeLlm, type FakeLlm } from './llm-server.js';

// A client that drops a streaming run does not stop it: the run completes and its result is readable.
describe('a streaming client disconnects mid-run', () => {
  let stack: TestStack;
  let llm: FakeLlm;

  beforeAll(async () => {
    // About 2 s of streaming, so the client can leave while the llm block is still generating.
    llm = await startFakeLlm({ text: 'x'.repeat(400), chunkSize: 4, delayMs: 20 });
    stack = await createTestStack({ LLM_BASE_URL: llm.url });
    await stack.startWorker();
  });
  afterAll(async () => {
    await stack?.close();
    await llm?.close();
  });

  it('the run completes and /v1/runs/:id has its result', async () => {
    const { team, apiKey } = await credentialFactory(stack).fundedTenant();
    const { deploymentId } = await publishDirect(stack.db, {
      blocks: [
        { id: 'ask', type: 'llm', name: 'ask', config: { model: 'm', prompt: 'go' } },
        { id: 'o', type: 'output', name: 'o', config: { value: '{{ask.text}}' } },
      ],
      edges: [{ from: 'ask', to: 'o' }],
    }, { teamId: team.id });
    await stack.app.listen({ port: 0, host: '127.0.0.1' });
    const base = `http://127.0.0.1:${(stack.app.server.address() as AddressInfo).port}`;

    const abort = new AbortController();
    const res = await fetch(`${base}/api/released-app/${deploymentId}/run`, {
      method: 'POST', signal: abort.signal,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({}),
    });
    const runId = res.headers.get('x-run-id')!;
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let received = '';
    while (!received.includes('"block_chunk"')) received += decoder.decode((await reader.read()).value);
    abort.abort(); // the client goes away in the middle of the llm block
    await reader.cancel().catch(() => {});

    const deadline = Date.now() + 20_000;
    let run: { status: string; output: unknown } = { status: 'running', output: null };
    while (run.status === 'running' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      run = (await stack.app.inject({ method: 'GET', url: `/v1/runs/${runId}`, headers: { authorization: `Bearer ${apiKey}` } })).json();
    }
    expect(run).toMatchObject({ status: 'completed', output: 'x'.repeat(400) });
    const types = (await stack.db.selectFrom('run_events').select('type').where('run_id', '=', runId).orderBy('id').execute()).map((e) => e.type);
    expect(types.at(-1)).toBe('run_complete');
  });
});
