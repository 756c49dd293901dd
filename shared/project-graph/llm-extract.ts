import { z } from 'zod';
import { LlmError, streamChatCompletion } from '../llm-providers/llm-client.js';
import type { Extraction } from './extract.js';

// `extractor: llm`: the operator's provider (LLM_BASE_URL) with the configured model reads the
// episode and answers entities and facts as JSON, Graphiti-style. The answer is validated; one that
// does not validate fails the job (a model that cannot follow the format will not on a retry either).

const SYSTEM = [
  'You extract a knowledge graph from one episode of text.',
  'Answer with one JSON object only, no prose: {"entities":[{"name":string,"kind":string}],',
  '"facts":[{"fact":string,"relation":string,"source":string|null,"target":string|null,"valid_at":string|null,"invalid_at":string|null}]}.',
  'A fact is one self-contained sentence; source and target are entity names; valid_at / invalid_at are ISO 8601 times',
  'when the text says when the fact became or stopped being true, else null.',
].join(' ');

const answerSchema = z.object({
  entities: z.array(z.object({ name: z.string().trim().min(1).max(200), kind: z.string().trim().max(100).default('entity') })).max(200),
  facts: z.array(z.object({
    fact: z.string().trim().min(1).max(20_000),
    relation: z.string().trim().max(100).default('states'),
    source: z.string().max(200).nullable().default(null),
    target: z.string().max(200).nullable().default(null),
    valid_at: z.iso.datetime({ offset: true }).nullable().default(null),
    invalid_at: z.iso.datetime({ offset: true }).nullable().default(null),
  })).min(1).max(500),
});

/** Thrown when the model's answer is not the JSON asked for: not retried. */
export class ExtractionRefused extends Error {
  override name = 'ExtractionRefused';
}

/** The first `{ … }` of the answer (models wrap JSON in code fences or a sentence now and then). */
function jsonOf(text: string): unknown {
  const start = text.indexOf('{');
  const end = text.lastIndexOf('}');
  if (start < 0 || end <= start) throw new ExtractionRefused('The model answered no JSON object');
  try {
    return JSON.parse(text.slice(start, end + 1));
  } catch {
    throw new ExtractionRefused('The model answered malformed JSON');
  }
}

export async function extractWithLlm(
  options: { baseUrl: string; apiKey?: string; model: string; signal?: AbortSignal },
  episode: { name: string; content: string },
): Promise<Extraction> {
  let text: string;
  try {
    ({ text } = await streamChatCompletion({
      baseUrl: options.baseUrl, apiKey: options.apiKey, model: options.model, system: SYSTEM, temperature: 0,
      prompt: `Episode "${episode.name}":\n\n${episode.content}`, signal: options.signal,
    }, () => {}));
  } catch (error) {
    // A provider that refuses the request (bad key, unknown model) will refuse it again.
    if (error instanceof LlmError && !error.retryable) throw new ExtractionRefused(error.message);
    throw error;
  }
  const parsed = answerSchema.safeParse(jsonOf(text));
  if (!parsed.success) throw new ExtractionRefused(`The model's answer does not match the graph format: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return {
    entities: parsed.data.entities,
    facts: parsed.data.facts.map((f) => ({ fact: f.fact, relation: f.relation, source: f.source, target: f.target, validAt: f.valid_at, invalidAt: f.invalid_at })),
  };
}
