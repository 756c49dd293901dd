import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A small OpenAI-compatible chat-completions server on 127.0.0.1 for tests. It answers any POST
 * whose path ends in `/chat/completions` with a real SSE stream (`data: {...}\n\n` chunks with
 * `choices[0].delta.content`, a finish chunk, a usage chunk when asked for, `data: [DONE]`), and
 * records every request it received. A POST to `…/embeddings` gets deterministic vectors (see
 * `fakeEmbedding`), listed in reverse order so that clients must sort them by `index`.
 */
export interface FakeLlmOptions {
  /** The completion to stream, cut into `chunkSize`-character deltas. Default `'Hello from the fake LLM.'`. */
  text?: string;
  /** Exact deltas to stream (overrides `text`). */
  tokens?: string[];
  /** Characters per delta when cutting `text`. Default 4. */
  chunkSize?: number;
  /** Pause between chunks, ms. Default 0 (chunks still go out one write each). */
  delayMs?: number;
  /** Fail every request with this HTTP status and an OpenAI-shaped error body. */
  status?: number;
  /** The error body's `error.message` when `status` is set. */
  errorMessage?: string;
  /** `'headers'`: never answer; `'body'`: send the headers and first chunk, then nothing. */
  stall?: 'headers' | 'body';
  /** Usage of the final chunk; default derived from the request and deltas. `null`: send none. */
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
  /** When set, a request without `Authorization: Bearer <apiKey>` gets 401 `Incorrect API key provided: <sent key>`. */
  apiKey?: string;
  /** `/embeddings`: dimensions of the bag-of-words vectors. Default 16. */
  embeddingDimensions?: number;
  /** `/embeddings`: words counted as another word (`{ car: 'automobile' }`), so synonyms embed close together. */
  synonyms?: Record<string, string>;
  /** `/embeddings` only: fail with this HTTP status (chat completions keep answering). */
  embeddingsStatus?: number;
}

export interface FakeLlmRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body (model, messages, temperature, max_tokens, stream, stream_options…). */
  body: Record<string, unknown>;
}

export interface FakeLlm {
  /** Base URL to use as LLM_BASE_URL, e.g. `http://127.0.0.1:54321/v1`. */
  url: string;
  requests: FakeLlmRequest[];
  /** Changes the behaviour for the following requests. */
  configure(options: FakeLlmOptions): void;
  close(): Promise<void>;
}

export async function startFakeLlm(initial: FakeLlmOptions = {}): Promise<FakeLlm> {
  let options: FakeLlmOptions = { ...initial };
  const requests: FakeLlmRequest[] = [];
  const pending = new Set<NodeJS.Timeout>();
  const wait = (ms: number) => new Promise<void>((resolve) => {
    const timer = setTimeout(() => { pending.delete(timer); resolve(); }, ms);
    pending.add(timer);
  });

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = req.url ?? '/';
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
      } catch {
        // recorded as {}
      }
      requests.push({ method: req.method ?? 'GET', path, headers: req.headers, body });
      void answer(path, req.method ?? 'GET', req.headers, body, res, { ...options }).catch(() => res.destroy());
    });
  });

  async function answer(path: string, method: string, headers: IncomingHttpHeaders, body: Record<string, unknown>, res: ServerResponse, opts: FakeLlmOptions) {
    if (method === 'POST' && (path.split('?')[0] ?? '').endsWith('/embeddings')) return answerEmbeddings(headers, body, res, opts);
    if (method !== 'POST' || !(path.split('?')[0] ?? '').endsWith('/chat/completions')) {
      return sendError(res, 404, `Unknown path ${path}`);
    }
    if (opts.apiKey !== undefined && headers.authorization !== `Bearer ${opts.apiKey}`) {
      const sent = (headers.authorization ?? '').replace(/^Bearer\s+/i, '');
      return sendError(res, 401, `Incorrect API key provided: ${sent}. You can find your API key at https://example.invalid.`, 'invalid_api_key');
    }
    if (opts.status !== undefined) return sendError(res, opts.status, opts.errorMessage ?? `Fake failure ${opts.status}`);
    if (opts.stall === 'headers') return; // never answers; close() destroys the socket

    const tokens = opts.tokens ?? cut(opts.text ?? 'Hello from the fake LLM.', opts.chunkSize ?? 4);
    const id = `chatcmpl-fake-${requests.length}`;
    const model = typeof body.model === 'string' ? body.model : 'fake';
    const frame = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`;
    const chunk = (delta: Record<string, unknown>, finish: string | null) =>
      frame({ id, object: 'chat.completion.chunk', created: 0, model, choices: [{ index: 0, delta, finish_reason: finish }] });

    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    res.write(chunk({ role: 'assistant', content: '' }, null));
    for (const [index, token] of tokens.entries()) {
      if (res.destroyed) return;
      if (opts.delayMs) await wait(opts.delayMs);
      res.write(chunk({ content: token }, null));
      if (opts.stall === 'body' && index === 0) return; // keeps the connection open, silent
    }
    if (opts.stall === 'body') return;
    res.write(chunk({}, 'stop'));
    const includeUsage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
    if (includeUsage && opts.usage !== null) {
      const promptTokens = JSON.stringify(body.messages ?? []).length >> 2;
      const usage = opts.usage ?? { prompt_tokens: promptTokens, completion_tokens: tokens.length, total_tokens: promptTokens + tokens.length };
      res.write(frame({ id, object: 'chat.completion.chunk', created: 0, model, choices: [], usage }));
    }
    res.end('data: [DONE]\n\n');
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    configure(next) { options = { ...next }; },
    async close() {
      for (const timer of pending) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** `POST …/embeddings` `{ model, input: string | string[] }`: an OpenAI-shaped list of `fakeEmbedding`s. */
function answerEmbeddings(headers: IncomingHttpHeaders, body: Record<string, unknown>, res: ServerResponse, opts: FakeLlmOptions): void {
  if (opts.apiKey !== undefined && headers.authorization !== `Bearer ${opts.apiKey}`) {
    return sendError(res, 401, 'Incorrect API key provided.', 'invalid_api_key');
  }
  const status = opts.embeddingsStatus ?? opts.status;
  if (status !== undefined) return sendError(res, status, opts.errorMessage ?? `Fake failure ${status}`);
  if (opts.stall === 'headers') return; // never answers; close() destroys the socket
  const input = typeof body.input === 'string' ? [body.input] : Array.isArray(body.input) ? body.input.map(String) : [];
  if (input.length === 0) return sendError(res, 400, "'input' must be a non-empty string or array of strings");
  const data = input.map((text, index) => ({ object: 'embedding', index, embedding: fakeEmbedding(text, opts) })).reverse();
  const tokens = input.reduce((sum, text) => sum + words(text).length, 0);
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ object: 'list', data, model: typeof body.model === 'string' ? body.model : 'fake', usage: { prompt_tokens: tokens, total_tokens: tokens } }));
}

const words = (text: string) => text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];

/**
 * A bag of words hashed (FNV-1a) into `embeddingDimensions` counts, scaled to length 1: texts that
 * share words (or `synonyms` of them) point the same way. Deterministic.
 */
export function fakeEmbedding(text: string, opts: Pick<FakeLlmOptions, 'embeddingDimensions' | 'synonyms'> = {}): number[] {
  const vector = new Array<number>(opts.embeddingDimensions ?? 16).fill(0);
  for (const word of words(text)) {
    const canonical = opts.synonyms?.[word] ?? word;
    let hash = 0x811c9dc5;
    for (const char of canonical) hash = Math.imul(hash ^ char.codePointAt(0)!, 0x01000193) >>> 0;
    vector[hash % vector.length]! += 1;
  }
  const norm = Math.hypot(...vector);
  return norm === 0 ? vector : vector.map((x) => x / norm);
}

function sendError(res: ServerResponse, status: number, message: string, code: string | null = null): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { message, type: status >= 500 ? 'server_error' : 'invalid_request_error', param: null, code } }));
}

function cut(text: string, size: number): string[] {
  const out: string[] = [];
  const chars = Array.from(text);
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(''));
  return out;
}
