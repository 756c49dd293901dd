import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeLlm, type FakeLlm } from '../../test/app-runs/llm-server.js';
import { LlmError, streamChatCompletion, type ChatCompletionOptions } from './llm-client.js';

const KEY = 'sk-test-secret-0123456789abcdef';

describe('streamChatCompletion against an OpenAI-compatible server', () => {
  let llm: FakeLlm;
  const base = (): ChatCompletionOptions => ({ baseUrl: llm.url, apiKey: KEY, model: 'gpt-test', prompt: 'Say hello' });
  const collect = async (options: ChatCompletionOptions) => {
    const deltas: string[] = [];
    const result = await streamChatCompletion(options, (d) => deltas.push(d));
    return { ...result, deltas };
  };
  const failure = async (options: ChatCompletionOptions): Promise<LlmError> => {
    const error = await streamChatCompletion(options, () => undefined).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(LlmError);
    return error as LlmError;
  };

  beforeAll(async () => { llm = await startFakeLlm(); });
  afterAll(() => llm?.close());
  beforeEach(() => { llm.configure({}); llm.requests.length = 0; });

  it('assembles the text and usage from many small deltas, calling onDelta in order', async () => {
    const text = 'The quick brown fox jumps over the lazy dog. '.repeat(20);
    llm.configure({ text, chunkSize: 1, usage: { prompt_tokens: 12, completion_tokens: 900, total_tokens: 912 } });
    const result = await collect(base());
    expect(result.text).toBe(text);
    expect(result.deltas).toHaveLength(text.length);
    expect(result.deltas.join('')).toBe(text);
    expect(result.usage).toEqual({ promptTokens: 12, completionTokens: 900, totalTokens: 912 });
  });

  it('sends the system and user messages, model, temperature, max_tokens, stream flags and the bearer key', async () => {
    await collect({ ...base(), system: 'You are terse.', temperature: 0.2, maxTokens: 64 });
    expect(llm.requests).toHaveLength(1);
    const request = llm.requests[0]!;
    expect(request.method).toBe('POST');
    expect(request.path).toBe('/v1/chat/completions');
    expect(request.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(request.headers['content-type']).toMatch(/^application\/json/);
    expect(request.body).toEqual({
      model: 'gpt-test',
      messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Say hello' }],
      temperature: 0.2,
      max_tokens: 64,
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it('leaves out what is not set (no system message, temperature, max_tokens, auth header) and tolerates a trailing slash', async () => {
    await collect({ baseUrl: `${llm.url}/`, model: 'm', prompt: 'p', temperature: 0 });
    const request = llm.requests[0]!;
    expect(request.path).toBe('/v1/chat/completions');
    expect(request.headers.authorization).toBeUndefined();
    expect(request.body.messages).toEqual([{ role: 'user', content: 'p' }]);
    expect(request.body.temperature).toBe(0);
    expect(request.body).not.toHaveProperty('max_tokens');
  });

  it('usage is null when the provider sends none', async () => {
    llm.configure({ text: 'no usage here', usage: null });
    const result = await collect(base());
    expect(result).toMatchObject({ text: 'no usage here', usage: null });
  });

  it('401 is a rejected (non-retryable) error with the status and provider message, never the key', async () => {
    llm.configure({ apiKey: 'the-right-key' });
    const error = await failure(base());
    expect(error.kind).toBe('rejected');
    expect(error.retryable).toBe(false);
    expect(error.status).toBe(401);
    expect(error.message).toMatch(/^LLM provider rejected the request \(HTTP 401\): Incorrect API key provided: \[redacted\]/);
    expect(error.message).not.toContain(KEY);
    expect(error.message).not.toContain(KEY.slice(0, 12));
  });

  it('truncates a long provider message to 300 characters', async () => {
    llm.configure({ status: 404, errorMessage: `The model does not exist: ${'x'.repeat(2000)}` });
    const error = await failure(base());
    expect(error.kind).toBe('rejected');
    const detail = error.message.slice(error.message.indexOf(': ') + 2);
    expect(detail.length).toBeLessThanOrEqual(300);
    expect(detail).toMatch(/^The model does not exist: x+…$/);
  });

  it('5xx, 429 and an unreachable provider are retryable', async () => {
    llm.configure({ status: 500, errorMessage: 'overloaded' });
    const e500 = await failure(base());
    expect(e500).toMatchObject({ kind: 'unavailable', status: 500, retryable: true });
    expect(e500.message).toBe('LLM provider failed (HTTP 500): overloaded');

    llm.configure({ status: 429, errorMessage: 'slow down' });
    expect(await failure(base())).toMatchObject({ kind: 'unavailable', status: 429, retryable: true });

    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const unreachable = await failure({ ...base(), baseUrl: `http://127.0.0.1:${port}/v1` });
    expect(unreachable).toMatchObject({ kind: 'unavailable', retryable: true });
    expect(unreachable.message).toMatch(/^LLM provider unreachable: /);
  });

  it('a stream that stalls after its first chunk fails on the idle timeout', async () => {
    llm.configure({ text: 'abcdefgh', chunkSize: 2, stall: 'body' });
    const deltas: string[] = [];
    const started = Date.now();
    const error = await streamChatCompletion({ ...base(), idleTimeoutMs: 200 }, (d) => deltas.push(d)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmError);
    expect(error).toMatchObject({ kind: 'timeout', retryable: true, message: 'LLM provider sent nothing for 200 ms' });
    expect(deltas).toEqual(['ab']);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('a provider that never answers fails on the idle timeout too', async () => {
    llm.configure({ stall: 'headers' });
    expect(await failure({ ...base(), idleTimeoutMs: 150 })).toMatchObject({ kind: 'timeout' });
  });

  it('a steady but slow stream fails on the overall timeout', async () => {
    llm.configure({ text: 'x'.repeat(100), chunkSize: 1, delayMs: 20 });
    const error = await failure({ ...base(), timeoutMs: 300, idleTimeoutMs: 5_000 });
    expect(error).toMatchObject({ kind: 'timeout', message: 'LLM request timed out after 300 ms' });
  });

  it('an aborted signal (activity cancellation) rethrows its reason', async () => {
    llm.configure({ text: 'abcdefgh', chunkSize: 1, delayMs: 30 });
    const controller = new AbortController();
    const reason = new Error('cancelled by Temporal');
    const promise = streamChatCompletion({ ...base(), signal: controller.signal }, () => controller.abort(reason));
    await expect(promise).rejects.toBe(reason);
  });

  it('an error thrown by onDelta is rethrown untouched and ends the request', async () => {
    llm.configure({ text: 'abcdefgh', chunkSize: 1 });
    const boom = new TypeError('event log down');
    await expect(streamChatCompletion(base(), () => { throw boom; })).rejects.toBe(boom);
  });

  it('accepts a provider that ignores stream and answers with one JSON completion', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: 'whole answer' } }], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const result = await collect({ ...base(), baseUrl: `http://127.0.0.1:${port}` });
      expect(result).toEqual({ text: 'whole answer', usage: { promptTokens: 3, completionTokens: 2, totalTokens: 5 }, deltas: ['whole answer'] });
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
