import { randomUUID } from 'node:crypto';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLlmBlockActivities, NO_LLM_PROVIDER, type LlmBlockDeps } from '../../activities/app-runs/llm-block.js';
import type { LlmBlockRequest, LlmBlockResult } from '../../shared/app-runs/contracts.js';
import { insertRunEvents } from '../../shared/app-runs/run-events-repository.js';
import { createProject } from '../../shared/identity/service.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { startFakeLlm, type FakeLlm } from './llm-server.js';

const KEY = 'sk-live-do-not-leak-9f8e7d6c5b4a';

// The activity called directly (outside Temporal, so no heartbeats), writing to a real run_events table.
describe('runLlmBlock activity', () => {
  let stack: TestStack;
  let llm: FakeLlm;
  let newRun: () => Promise<string>;

  const activities = (options: LlmBlockDeps['options'] = {}, config: LlmBlockDeps['config'] = { LLM_BASE_URL: llm.url, LLM_API_KEY: KEY }) =>
    createLlmBlockActivities({ db: stack.db, config, secrets: stack.deps.secrets, options });
  const chunkRows = async (runId: string) =>
    stack.db.selectFrom('run_events').select(['id', 'event_key', 'type', 'payload']).where('run_id', '=', runId).orderBy('id').execute();
  const concatenated = async (runId: string) =>
    (await chunkRows(runId)).map((row) => (row.payload as { delta: string }).delta).join('');
  const failureOf = async (promise: Promise<unknown>) => promise.then(() => { throw new Error('expected a failure'); }, (e: unknown) => e as Error);

  beforeAll(async () => {
    stack = await createTestStack();
    llm = await startFakeLlm();
    const make = credentialFactory(stack);
    const owner = await make.user('owner');
    const team = await make.team(owner.id);
    const project = await createProject(stack.db, { teamId: team.id, name: 'Apps' });
    const documentId = randomUUID();
    const graph = JSON.stringify({ blocks: [], edges: [] });
    await stack.db.insertInto('documents').values({ id: documentId, project_id: project.id, name: 'App', graph, created_by: owner.id }).execute();
    const deploymentId = randomUUID();
    await stack.db.insertInto('deployments').values({
      id: deploymentId, document_id: documentId, project_id: project.id, team_id: team.id, version_major: 1, version_minor: 0,
      snapshot: graph, api_schema: JSON.stringify({}), published_by: owner.id,
    }).execute();
    newRun = async () => {
      const id = randomUUID();
      await stack.db.insertInto('runs').values({
        id, deployment_id: deploymentId, document_id: documentId, team_id: team.id, trigger_source: 'api-key', inputs: JSON.stringify({}),
      }).execute();
      return id;
    };
  });
  afterAll(async () => {
    await llm?.close();
    await stack?.close();
  });
  beforeEach(() => { llm.configure({}); llm.requests.length = 0; });

  it('returns the text and usage and streams the deltas as block_chunk events, in order', async () => {
    const runId = await newRun();
    const text = 'Once upon a time, a workflow asked a model for a story. '.repeat(5);
    llm.configure({ text, chunkSize: 3, usage: { prompt_tokens: 7, completion_tokens: 95, total_tokens: 102 } });
    const result = await activities().runLlmBlock({ runId, blockId: 'l', model: 'gpt-test', prompt: 'Tell a story', system: 'Be brief', temperature: 0.5, maxTokens: 200 });
    expect(result).toEqual({ text, usage: { promptTokens: 7, completionTokens: 95, totalTokens: 102 } });

    const rows = await chunkRows(runId);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.map((r) => r.event_key)).toEqual(rows.map((_, seq) => `l:chunk:${seq}`));
    for (const row of rows) {
      expect(row.type).toBe('block_chunk');
      expect(row.payload).toEqual({ blockId: 'l', delta: expect.any(String) });
    }
    expect(await concatenated(runId)).toBe(text);

    const request = llm.requests[0]!;
    expect(request.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(request.body).toMatchObject({
      model: 'gpt-test', temperature: 0.5, max_tokens: 200, stream: true,
      messages: [{ role: 'system', content: 'Be brief' }, { role: 'user', content: 'Tell a story' }],
    });
  });

  it('batches a 500-token flood into far fewer rows, losing nothing', async () => {
    const runId = await newRun();
    const tokens = Array.from({ length: 500 }, (_, i) => ` t${i}`);
    llm.configure({ tokens, delayMs: 1 });
    const result = await activities().runLlmBlock({ runId, blockId: 'flood', model: 'm', prompt: 'go' }) as LlmBlockResult;
    expect(result.text).toBe(tokens.join(''));
    const rows = await chunkRows(runId);
    // 500 tokens over ≥ 500 ms with 50 ms batches: on the order of 10–20 rows, never one per token.
    expect(rows.length).toBeGreaterThan(1);
    expect(rows.length).toBeLessThan(100);
    expect(rows.map((r) => r.event_key)).toEqual(rows.map((_, seq) => `flood:chunk:${seq}`));
    expect(await concatenated(runId)).toBe(tokens.join(''));
  });

  it('flushes as soon as 1 KiB is waiting, before the interval', async () => {
    const runId = await newRun();
    const text = 'y'.repeat(10 * 1024);
    llm.configure({ text, chunkSize: 256 });
    await activities({ flushIntervalMs: 60_000 }).runLlmBlock({ runId, blockId: 'big', model: 'm', prompt: 'go' });
    const rows = await chunkRows(runId);
    expect(rows.length).toBeGreaterThanOrEqual(2);
    expect(rows.every((r) => Buffer.byteLength((r.payload as { delta: string }).delta) >= 1024 || r === rows.at(-1))).toBe(true);
    expect(await concatenated(runId)).toBe(text);
  });

  it('chunk keys are idempotent: the same attempt written twice adds nothing', async () => {
    const runId = await newRun();
    // One 100-byte delta every 30 ms, flushed by size alone: both attempts cut the stream identically.
    llm.configure({ text: 'z'.repeat(1000), chunkSize: 100, delayMs: 30 });
    const sized = activities({ flushIntervalMs: 60_000, flushBytes: 100 });
    await sized.runLlmBlock({ runId, blockId: 'b', model: 'm', prompt: 'go' });
    const first = await chunkRows(runId);
    expect(first).toHaveLength(10);
    await sized.runLlmBlock({ runId, blockId: 'b', model: 'm', prompt: 'go' });
    expect(await chunkRows(runId)).toEqual(first);
    // And insertRunEvents itself ignores a re-sent key.
    await insertRunEvents(stack.db, runId, [{ key: 'b:chunk:0', event: { type: 'block_chunk', blockId: 'b', delta: 'other' } }]);
    expect(await chunkRows(runId)).toEqual(first);
  });

  it('401 upstream → non-retryable LlmRequestRejected with a safe message', async () => {
    const runId = await newRun();
    llm.configure({ apiKey: 'another-key' });
    const error = await failureOf(activities().runLlmBlock({ runId, blockId: 'l', model: 'm', prompt: 'p' }));
    expect(error).toBeInstanceOf(ApplicationFailure);
    expect(error).toMatchObject({ type: 'LlmRequestRejected', nonRetryable: true });
    expect(error.message).toMatch(/^LLM provider rejected the request \(HTTP 401\): Incorrect API key provided/);
    expect(error.message).not.toContain(KEY);
    expect(error.message).not.toContain('do-not-leak');
    expect(await chunkRows(runId)).toEqual([]);
  });

  it('500 upstream → a plain (retryable) Error', async () => {
    const runId = await newRun();
    llm.configure({ status: 503, errorMessage: 'model is loading' });
    const error = await failureOf(activities().runLlmBlock({ runId, blockId: 'l', model: 'm', prompt: 'p' }));
    expect(error).not.toBeInstanceOf(ApplicationFailure);
    expect(error.message).toBe('LLM provider failed (HTTP 503): model is loading');
  });

  it('a stalled stream times out (retryable) after writing what had arrived', async () => {
    const runId = await newRun();
    llm.configure({ text: 'first-bytes-then-silence', chunkSize: 11, stall: 'body' });
    const error = await failureOf(activities({ idleTimeoutMs: 300, flushIntervalMs: 20 }).runLlmBlock({ runId, blockId: 's', model: 'm', prompt: 'p' }));
    expect(error).not.toBeInstanceOf(ApplicationFailure);
    expect(error.message).toBe('LLM provider sent nothing for 300 ms');
    expect(await concatenated(runId)).toBe('first-bytes');
  });

  it('a retry that repeats what was streamed streams on after it: the chunks read as one generation', async () => {
    const runId = await newRun();
    const text = 'The quick brown fox jumps over the lazy dog. '.repeat(4);
    // The first attempt gets one delta, then silence, and times out.
    llm.configure({ text, chunkSize: 20, stall: 'body' });
    const quick = activities({ idleTimeoutMs: 300, flushIntervalMs: 10 });
    await failureOf(quick.runLlmBlock({ runId, blockId: 'r', model: 'm', prompt: 'go' }));
    expect(await concatenated(runId)).toBe(text.slice(0, 20));
    // The retry gets the same generation, cut differently.
    llm.configure({ text, chunkSize: 7 });
    expect((await quick.runLlmBlock({ runId, blockId: 'r', model: 'm', prompt: 'go' }) as LlmBlockResult).text).toBe(text);
    expect(await concatenated(runId)).toBe(text);
    const rows = await chunkRows(runId);
    expect(rows.map((r) => r.event_key)).toEqual(rows.map((_, seq) => `r:chunk:${seq}`));
  });

  it('a retry whose generation departs from what was streamed streams nothing more; its output is the new text', async () => {
    const runId = await newRun();
    llm.configure({ text: 'Alpha beta gamma delta', chunkSize: 10, stall: 'body' });
    const quick = activities({ idleTimeoutMs: 300, flushIntervalMs: 10 });
    await failureOf(quick.runLlmBlock({ runId, blockId: 'd', model: 'm', prompt: 'go' }));
    expect(await concatenated(runId)).toBe('Alpha beta');
    // Same first 9 characters, then another answer: before, its tail after character 10 was appended.
    const other = 'Alpha bet on zeta, a different answer';
    llm.configure({ text: other, chunkSize: 4, delayMs: 15 }); // a chunk per delta
    expect((await quick.runLlmBlock({ runId, blockId: 'd', model: 'm', prompt: 'go' }) as LlmBlockResult).text).toBe(other);
    expect(await concatenated(runId)).toBe('Alpha beta');
  });

  it('no LLM_BASE_URL → non-retryable "No LLM provider is configured"', async () => {
    const runId = await newRun();
    const error = await failureOf(activities({}, { LLM_API_KEY: KEY }).runLlmBlock({ runId, blockId: 'l', model: 'm', prompt: 'p' }));
    expect(error).toBeInstanceOf(ApplicationFailure);
    expect(error).toMatchObject({ nonRetryable: true, message: NO_LLM_PROVIDER });
    expect(NO_LLM_PROVIDER).toBe('No LLM provider is configured (set LLM_BASE_URL)');
    expect(llm.requests).toHaveLength(0);
  });

  it('inside an activity context: heartbeats as chunks arrive, and cancellation aborts the request', async () => {
    const runId = await newRun();
    llm.configure({ text: 'abcdefghij', chunkSize: 1, delayMs: 5 });
    const env = new MockActivityEnvironment();
    let heartbeats = 0;
    env.on('heartbeat', () => { heartbeats += 1; });
    const { runLlmBlock } = activities();
    const result = await env.run(async (input: LlmBlockRequest) => (await runLlmBlock(input)) as LlmBlockResult, { runId, blockId: 'h', model: 'm', prompt: 'p' }) as LlmBlockResult;
    expect(result.text).toBe('abcdefghij');
    expect(heartbeats).toBeGreaterThanOrEqual(10);

    llm.configure({ text: 'x'.repeat(200), chunkSize: 1, delayMs: 20 });
    const cancellable = new MockActivityEnvironment();
    cancellable.on('heartbeat', () => cancellable.cancel());
    const error = await failureOf(cancellable.run(runLlmBlock, { runId: await newRun(), blockId: 'c', model: 'm', prompt: 'p' }));
    expect(error).toBeInstanceOf(CancelledFailure);
  });
});
