import { fetch } from 'undici';
import { LlmError, providerHttpError, redactor, truncate } from '../llm-providers/llm-client.js';
import type { Config } from '../config.js';
import type { GraphConfig } from './config.js';

// Embeddings of graph facts and search queries (graph.config `embeddingModel`): one OpenAI-compatible
// `POST {LLM_BASE_URL}/embeddings` per batch, through the operator's own provider, as the `llm`
// extractor calls it (shared/llm-providers/llm-client.ts). LLM_BASE_URL is operator configuration, not a
// team's: it is not put through the SSRF guard, and redirects are refused as there. Errors are
// `LlmError`s with the same kinds (`rejected`: a 4xx, retrying will not help; `unavailable`, `timeout`).
// Vectors are stored as `real[]` (pgvector is not available here) and compared in SQL.

/** Texts per request: providers accept a few thousand inputs, but batches keep each answer small. */
export const EMBEDDING_BATCH = 64;
/** Per request (one batch). A build embeds its facts batch after batch, so it may take longer in all. */
export const EMBEDDING_TIMEOUT_MS = 60_000;
/** A search embeds its query once and waits this long at most before ranking by text only. */
export const QUERY_EMBEDDING_TIMEOUT_MS = 5_000;
/** The longest vector accepted (OpenAI's largest model has 3,072 dimensions). */
const MAX_DIMENSIONS = 8_192;

export interface Embedder {
  /** Recorded on the generation: a query is compared only with vectors of the same model. */
  readonly model: string;
  /** One vector per text, in order, all of the same length. */
  embed(texts: string[], options?: { signal?: AbortSignal; timeoutMs?: number }): Promise<number[][]>;
}

export interface EmbedderOptions {
  /** e.g. `https://api.openai.com/v1`; `/embeddings` is appended. */
  baseUrl: string;
  apiKey?: string;
  model: string;
}

/** The graph's embedder, or null when no embedding model is configured (or no provider: LLM_BASE_URL). */
export function graphEmbedder(graph: Pick<GraphConfig, 'embeddingModel'>, config: Pick<Config, 'LLM_BASE_URL' | 'LLM_API_KEY'>): Embedder | null {
  if (!graph.embeddingModel || !config.LLM_BASE_URL) return null;
  return createEmbedder({ baseUrl: config.LLM_BASE_URL, apiKey: config.LLM_API_KEY, model: graph.embeddingModel });
}

export function embeddingsUrl(baseUrl: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/embeddings`;
}

export function createEmbedder(options: EmbedderOptions): Embedder {
  return {
    model: options.model,
    async embed(texts, call = {}) {
      const vectors: number[][] = [];
      for (let i = 0; i < texts.length; i += EMBEDDING_BATCH) {
        const batch = await embedBatch(options, texts.slice(i, i + EMBEDDING_BATCH), call.timeoutMs ?? EMBEDDING_TIMEOUT_MS, call.signal);
        if (vectors.length > 0 && batch[0]!.length !== vectors[0]!.length) {
          throw new LlmError(`Embeddings provider answered vectors of ${batch[0]!.length} and ${vectors[0]!.length} dimensions`, 'unavailable');
        }
        vectors.push(...batch);
      }
      return vectors;
    },
  };
}

interface EmbeddingsAnswer { data?: Array<{ index?: unknown; embedding?: unknown }>; error?: unknown }

async function embedBatch(options: EmbedderOptions, input: string[], timeoutMs: number, signal: AbortSignal | undefined): Promise<number[][]> {
  const redact = redactor(options.apiKey);
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, timeoutMs);
  const onAbort = () => controller.abort(signal?.reason);
  if (signal?.aborted) onAbort();
  else signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const response = await fetch(embeddingsUrl(options.baseUrl), {
      // A redirect could lead anywhere; providers do not redirect API calls (as llm-client).
      redirect: 'error',
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
      },
      body: JSON.stringify({ model: options.model, input }),
      signal: controller.signal,
    });
    const text = await response.text();
    if (!response.ok) throw providerHttpError(response.status, text, redact, 'Embeddings provider');
    let answer: EmbeddingsAnswer;
    try {
      answer = JSON.parse(text) as EmbeddingsAnswer;
    } catch {
      throw new LlmError('Embeddings provider answered something other than JSON', 'unavailable', response.status);
    }
    return vectorsOf(answer, input.length);
  } catch (error) {
    if (signal?.aborted) throw signal.reason ?? error;
    if (timedOut) throw new LlmError(`Embeddings request timed out after ${timeoutMs} ms`, 'timeout');
    if (error instanceof LlmError) throw error;
    const cause = (error as { cause?: unknown }).cause;
    const detail = cause instanceof Error ? cause.message : (error as Error).message;
    throw new LlmError(`Embeddings provider unreachable: ${truncate(redact(String(detail)))}`, 'unavailable');
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}

/** `data[i].embedding` ordered by `data[i].index`: exactly one finite vector per input, all of one length. */
function vectorsOf(answer: EmbeddingsAnswer, count: number): number[][] {
  const data = Array.isArray(answer.data) ? answer.data : [];
  if (data.length !== count) throw new LlmError(`Embeddings provider answered ${data.length} vectors for ${count} texts`, 'unavailable');
  const vectors: number[][] = new Array<number[]>(count);
  for (const [position, item] of data.entries()) {
    const index = typeof item.index === 'number' ? item.index : position;
    const vector = item.embedding;
    const valid = Number.isInteger(index) && index >= 0 && index < count && vectors[index] === undefined
      && Array.isArray(vector) && vector.length > 0 && vector.length <= MAX_DIMENSIONS
      && vector.every((x) => typeof x === 'number' && Number.isFinite(x));
    if (!valid) throw new LlmError('Embeddings provider answered a malformed vector (base64 encoding is not asked for)', 'unavailable');
    vectors[index] = vector as number[];
  }
  if (vectors.some((v) => v.length !== vectors[0]!.length)) throw new LlmError('Embeddings provider answered vectors of different lengths', 'unavailable');
  return vectors;
}

/**
 * Characters of a fact sent to the embedding model: facts quote up to 20,000 characters, more than
 * embedding models take (OpenAI's: 8,191 tokens), so a long fact is embedded by its beginning.
 */
export const MAX_EMBEDDED_CHARS = 4_000;

/**
 * The facts' vectors (one per fact, in order), or null without an embedder. A failure is an
 * `LlmError` of the provider's kind whose message names the model: the caller fails its build or
 * job with it (or lets its activity retry a passing failure), never writes the facts unembedded.
 */
export async function embedFacts(embedder: Embedder | null, facts: Array<{ fact: string }>, signal?: AbortSignal): Promise<number[][] | null> {
  if (!embedder || facts.length === 0) return null;
  try {
    return await embedder.embed(facts.map((f) => f.fact.slice(0, MAX_EMBEDDED_CHARS)), { signal });
  } catch (error) {
    if (error instanceof LlmError) throw new LlmError(`Embedding the facts with "${embedder.model}" failed: ${error.message}`, error.kind, error.status);
    throw error;
  }
}
