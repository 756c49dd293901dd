import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { Agent, fetch } from 'undici';
import { pinnedLookup, type VettedTarget } from '../outbound-http/ssrf-guard.js';

// The `llm` block's HTTP side: one streamed OpenAI-compatible chat completion. No database and no
// Temporal here (activities/app-runs/llm-block.ts adds those), so it is testable on its own.

export interface LlmUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

export interface ChatCompletionResult {
  text: string;
  /** Null when the provider sent no usage (it ignored `stream_options.include_usage`). */
  usage: LlmUsage | null;
}

/** A piece of the user message besides the prompt: a file or image passed natively, or a text in its place. */
export type ChatContentPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string } }
  | { type: 'file'; file: { filename: string; file_data: string } };

export interface ChatCompletionOptions {
  /** e.g. `https://api.openai.com/v1`; `/chat/completions` is appended. */
  baseUrl: string;
  apiKey?: string;
  model: string;
  prompt: string;
  /** Files (and hint texts) sent before the prompt in the user message; without any, its content is the prompt string. */
  parts?: ChatContentPart[];
  system?: string;
  temperature?: number;
  maxTokens?: number;
  /** Whole request, headers to last byte. Default 120 s. */
  timeoutMs?: number;
  /** Longest silence (no byte) before giving up, including the wait for the response headers. Default 30 s. */
  idleTimeoutMs?: number;
  /** Aborts the request (Temporal activity cancellation); the signal's reason is rethrown. */
  signal?: AbortSignal;
  /**
   * Addresses the SSRF guard vetted for the base URL's host (team-configured providers): the
   * connection goes only there. Unset for the operator's own provider (LLM_BASE_URL).
   */
  pinnedTo?: VettedTarget['addresses'];
}

/** One connection for this request, only to the vetted addresses (Host and SNI stay the URL's name). */
function pinnedAgent(addresses: VettedTarget['addresses']): Agent {
  return new Agent({ connect: { lookup: pinnedLookup(addresses) } });
}

export const LLM_REQUEST_TIMEOUT_MS = 120_000;
export const LLM_IDLE_TIMEOUT_MS = 30_000;
const MAX_PROVIDER_MESSAGE = 300;
const MAX_ERROR_BODY_BYTES = 64 * 1024;

/**
 * `rejected`: the provider answered 4xx (bad key, unknown model, invalid parameters): retrying will
 * not help. `unavailable`: 5xx, 408/429, network failure, or a broken stream. `timeout`: see the
 * options. Messages are safe to show to the app's caller: they never contain the API key.
 */
export type LlmErrorKind = 'rejected' | 'unavailable' | 'timeout';

export class LlmError extends Error {
  constructor(message: string, readonly kind: LlmErrorKind, readonly status?: number) {
    super(message);
    this.name = 'LlmError';
  }

  get retryable(): boolean {
    return this.kind !== 'rejected';
  }
}

/**
 * Streams one chat completion (`stream: true`, usage requested), calling `onDelta` with each piece
 * of content in order, and resolves with the whole text and the usage of the final chunk. A provider
 * that ignores `stream` and answers with one JSON completion is accepted too (one delta).
 * `onDelta` may throw (e.g. the event log is down): the request is aborted and that error rethrown.
 */
export async function streamChatCompletion(
  options: ChatCompletionOptions,
  onDelta: (delta: string) => void,
): Promise<ChatCompletionResult> {
  const timeoutMs = options.timeoutMs ?? LLM_REQUEST_TIMEOUT_MS;
  const idleTimeoutMs = options.idleTimeoutMs ?? LLM_IDLE_TIMEOUT_MS;
  const redact = redactor(options.apiKey);
  const controller = new AbortController();
  const dispatcher = options.pinnedTo ? pinnedAgent(options.pinnedTo) : undefined;
  let timedOut: string | undefined;
  const abortWith = (reason: string) => {
    timedOut ??= reason;
    controller.abort(new LlmError(reason, 'timeout'));
  };
  const overall = setTimeout(() => abortWith(`LLM request timed out after ${formatMs(timeoutMs)}`), timeoutMs);
  let idle: NodeJS.Timeout | undefined;
  const touch = () => {
    clearTimeout(idle);
    idle = setTimeout(() => abortWith(`LLM provider sent nothing for ${formatMs(idleTimeoutMs)}`), idleTimeoutMs);
  };
  const onExternalAbort = () => controller.abort(options.signal?.reason);
  if (options.signal?.aborted) onExternalAbort();
  else options.signal?.addEventListener('abort', onExternalAbort, { once: true });

  try {
    touch();
    const response = await fetch(chatCompletionsUrl(options.baseUrl), {
      // A redirect could lead past the SSRF guard; providers do not redirect API calls.
      redirect: 'error',
      ...(dispatcher ? { dispatcher } : {}),
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'text/event-stream',
        ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
      },
      body: JSON.stringify(requestBody(options)),
      signal: controller.signal,
    });
    touch();
    if (!response.ok) {
      const body = await readLimited(response, touch);
      throw providerHttpError(response.status, body, redact);
    }
    if (!response.body) throw new LlmError('LLM provider sent an empty response', 'unavailable', response.status);
    const contentType = response.headers.get('content-type') ?? '';
    if (!contentType.includes('text/event-stream')) {
      return parseJsonCompletion(await readLimited(response, touch, Infinity), onDelta, redact);
    }
    return await readStream(response.body, onDelta, touch, redact);
  } catch (error) {
    if (options.signal?.aborted) throw options.signal.reason ?? error;
    if (timedOut) throw new LlmError(timedOut, 'timeout');
    if (error instanceof LlmError) throw error;
    if (error instanceof ProviderStreamError) throw error.llmError;
    if (error instanceof CallbackError) throw error.cause;
    // fetch's own failures (DNS, refused, reset): "fetch failed" with the reason in `cause`.
    if (error instanceof TypeError || isNodeSystemError(error)) {
      const cause = (error as { cause?: unknown }).cause;
      const detail = cause instanceof Error ? cause.message : (error as Error).message;
      throw new LlmError(`LLM provider unreachable: ${truncate(redact(detail))}`, 'unavailable');
    }
    // Anything else came from onDelta (the caller's own failure): rethrow it untouched.
    throw error;
  } finally {
    clearTimeout(overall);
    clearTimeout(idle);
    options.signal?.removeEventListener('abort', onExternalAbort);
    if (!controller.signal.aborted) controller.abort();
    void dispatcher?.destroy().catch(() => undefined);
  }
}

export function chatCompletionsUrl(baseUrl: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/chat/completions`;
}

function requestBody(options: ChatCompletionOptions): Record<string, unknown> {
  const messages = [
    ...(options.system ? [{ role: 'system', content: options.system }] : []),
    { role: 'user', content: options.parts?.length ? [...options.parts, { type: 'text', text: options.prompt }] : options.prompt },
  ];
  return {
    model: options.model,
    messages,
    stream: true,
    stream_options: { include_usage: true },
    ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
    ...(options.maxTokens !== undefined ? { max_tokens: options.maxTokens } : {}),
  };
}

/** A provider error found inside the stream (thrown through the parser's callback). */
class ProviderStreamError extends Error {
  constructor(readonly llmError: LlmError) {
    super(llmError.message);
  }
}

/** An error thrown by the caller's onDelta, rethrown as it was (never mistaken for a network error). */
class CallbackError extends Error {
  constructor(override readonly cause: unknown) {
    super('onDelta failed');
  }
}

function callDelta(onDelta: (delta: string) => void, delta: string): void {
  try {
    onDelta(delta);
  } catch (error) {
    throw new CallbackError(error);
  }
}

async function readStream(
  body: ReadableStream<Uint8Array>,
  onDelta: (delta: string) => void,
  touch: () => void,
  redact: (text: string) => string,
): Promise<ChatCompletionResult> {
  let text = '';
  let usage: LlmUsage | null = null;
  let done = false;
  let finished = false;
  const handle = (message: EventSourceMessage) => {
    if (done) return;
    const data = message.data.trim();
    if (data === '[DONE]') {
      done = true;
      return;
    }
    if (data === '') return;
    let chunk: StreamChunk;
    try {
      chunk = JSON.parse(data) as StreamChunk;
    } catch {
      throw new ProviderStreamError(new LlmError('LLM provider sent a malformed stream chunk', 'unavailable'));
    }
    if (chunk.error) {
      throw new ProviderStreamError(new LlmError(`LLM provider failed mid-stream: ${truncate(redact(errorText(chunk.error)))}`, 'unavailable'));
    }
    const choice = chunk.choices?.[0];
    const delta = choice?.delta?.content;
    if (typeof delta === 'string' && delta.length > 0) {
      text += delta;
      callDelta(onDelta, delta);
    }
    if (choice?.finish_reason) finished = true;
    if (chunk.usage) usage = toUsage(chunk.usage);
  };
  const parser = createParser({ onEvent: handle });
  const decoder = new TextDecoder();
  const reader = body.getReader();
  try {
    while (!done) {
      const { value, done: ended } = await reader.read();
      if (ended) break;
      touch();
      parser.feed(decoder.decode(value, { stream: true }));
    }
    if (!done) {
      parser.feed(decoder.decode() + '\n\n');
      if (!done && !finished) throw new LlmError('LLM stream ended before the completion finished', 'unavailable');
    }
  } finally {
    void reader.cancel().catch(() => undefined);
  }
  return { text, usage };
}

interface StreamChunk {
  choices?: Array<{ delta?: { content?: unknown }; message?: { content?: unknown }; finish_reason?: string | null }>;
  usage?: RawUsage | null;
  error?: unknown;
}

interface RawUsage { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number }

function toUsage(raw: RawUsage): LlmUsage {
  const promptTokens = Number(raw.prompt_tokens ?? 0);
  const completionTokens = Number(raw.completion_tokens ?? 0);
  return { promptTokens, completionTokens, totalTokens: Number(raw.total_tokens ?? promptTokens + completionTokens) };
}

function parseJsonCompletion(body: string, onDelta: (delta: string) => void, redact: (text: string) => string): ChatCompletionResult {
  let parsed: StreamChunk;
  try {
    parsed = JSON.parse(body) as StreamChunk;
  } catch {
    throw new LlmError('LLM provider answered with neither an event stream nor JSON', 'unavailable');
  }
  if (parsed.error) throw new LlmError(`LLM provider failed: ${truncate(redact(errorText(parsed.error)))}`, 'unavailable');
  const content = parsed.choices?.[0]?.message?.content;
  const text = typeof content === 'string' ? content : '';
  if (text) callDelta(onDelta, text);
  return { text, usage: parsed.usage ? toUsage(parsed.usage) : null };
}

/** Reads an error (or non-streamed) body, at most `limit` bytes, resetting the idle timer as bytes arrive. */
async function readLimited(response: Response, touch: () => void, limit = MAX_ERROR_BODY_BYTES): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let bytes = 0;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      touch();
      bytes += value.byteLength;
      text += decoder.decode(value, { stream: true });
      if (bytes >= limit) break;
    }
  } finally {
    void reader.cancel().catch(() => undefined);
  }
  return text + decoder.decode();
}

/**
 * The error for a provider's non-2xx answer (chat completions, embeddings), its message redacted
 * and truncated; `provider` names the caller's provider in the message.
 */
export function providerHttpError(status: number, body: string, redact: (text: string) => string, provider = 'LLM provider'): LlmError {
  let message = body.trim();
  try {
    const parsed = JSON.parse(body) as { error?: unknown; message?: unknown; detail?: unknown };
    message = errorText(parsed.error ?? parsed.message ?? parsed.detail ?? body);
  } catch {
    // not JSON: keep the text
  }
  const detail = message ? `: ${truncate(redact(message))}` : '';
  // 408 (timeout) and 429 (rate limit) are transient, like 5xx; any other 4xx is the request's fault.
  const transient = status >= 500 || status === 408 || status === 429;
  return transient
    ? new LlmError(`${provider} failed (HTTP ${status})${detail}`, 'unavailable', status)
    : new LlmError(`${provider} rejected the request (HTTP ${status})${detail}`, 'rejected', status);
}

function errorText(error: unknown): string {
  if (typeof error === 'string') return error;
  if (error && typeof error === 'object' && 'message' in error && typeof error.message === 'string') return error.message;
  return JSON.stringify(error) ?? '';
}

/** Provider text on one line, at most `max` characters. */
export function truncate(text: string, max = MAX_PROVIDER_MESSAGE): string {
  const single = text.replace(/\s+/g, ' ').trim();
  return single.length <= max ? single : `${single.slice(0, max - 1)}…`;
}

/** Removes the API key (and anything shaped like an OpenAI-style key) from provider text. */
export function redactor(apiKey: string | undefined): (text: string) => string {
  return (text) => {
    let out = apiKey ? text.split(apiKey).join('[redacted]') : text;
    out = out.replace(/\bsk-[A-Za-z0-9_*-]{6,}/g, '[redacted]');
    return out;
  };
}

function isNodeSystemError(error: unknown): boolean {
  return error instanceof Error && typeof (error as { code?: unknown }).code === 'string' && (error as { syscall?: unknown }).syscall !== undefined;
}

function formatMs(ms: number): string {
  return ms >= 1000 && ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}
