import { spawn, type ChildProcess } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { startFakeLlm, type FakeLlm } from './llm-server.js';
import { readSse } from '../harness/sse.js';

// The worker process dies (SIGKILL, no graceful stop) while an llm block streams. Temporal notices
// the missing heartbeats, a new worker retries the block, the run completes, and a client that
// resumes with Last-Event-ID gets every event exactly once.
describe('durability: the worker is killed mid-run', () => {
  const text = 'The quick brown fox jumps over the lazy dog. '.repeat(8);
  let stack: TestStack;
  let llm: FakeLlm;
  let child: ChildProcess | undefined;

  beforeAll(async () => {
    // About 7 s of streaming: long enough to kill the worker in the middle.
    llm = await startFakeLlm({ text, chunkSize: 4, delayMs: 80 });
    stack = await createTestStack({ LLM_BASE_URL: llm.url });
  });
  afterAll(async () => {
    child?.kill('SIGKILL');
    await stack?.close();
    await llm?.close();
  });

  it('the run completes on a new worker and the resumed stream has every event once', async () => {
    // The first worker is a real process running the production entry, so it can really be killed.
    child = spawn(process.execPath, ['--import', 'tsx', 'worker/main.ts'], {
      env: { ...stack.env, WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath') }, stdio: 'ignore',
    });
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
    const auth = { authorization: `Bearer ${apiKey}` };

    const abort = new AbortController();
    const res = await fetch(`${base}/api/released-app/${deploymentId}/run`, {
      method: 'POST', signal: abort.signal, headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ format: 'sse' }),
    });
    const runId = res.headers.get('x-run-id')!;
    const before = await readSse(res.body!, (events) => events.filter((e) => e.type === 'block_chunk').length >= 5);
    abort.abort();
    const killedAt = before.filter((e) => e.type === 'block_chunk').length;
    child.kill('SIGKILL');
    await new Promise((resolve) => child!.once('exit', resolve));
    expect(llm.requests).toHaveLength(1);

    await stack.startWorker();
    const resumed = await fetch(`${base}/api/runs/${runId}/events?format=sse`, { headers: { ...auth, 'last-event-id': String(before.at(-1)!.id) } });
    const after = await readSse(resumed.body!, (events) => events.some((e) => e.type === 'run_complete' || e.type === 'run_error'));

    const all = [...before, ...after];
    expect(new Set(all.map((e) => e.id)).size).toBe(all.length);
    expect(all.filter((e) => e.type === 'run_start')).toHaveLength(1);
    expect(all.at(-1)).toMatchObject({ type: 'run_complete' });
    expect(all.filter((e) => e.type === 'run_complete')).toHaveLength(1);
    // The retried block streamed from the start; chunks already stored were not stored twice.
    expect(all.filter((e) => e.type === 'block_chunk').map((e) => e.data.delta).join('')).toBe(text);
    expect(killedAt).toBeLessThan(text.length / 4);
    expect(llm.requests.length).toBeGreaterThanOrEqual(2);
    const run = await stack.db.selectFrom('runs').select(['status']).where('id', '=', runId).executeTakeFirstOrThrow();
    expect(run.status).toBe('completed');
    const complete = all.at(-1)!.data as { sessions: Array<{ blockId: string; output: unknown }> };
    expect(complete.sessions.find((s) => s.blockId === 'o')?.output).toBe(text);
  }, 90_000);
});
