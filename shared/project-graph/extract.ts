// The deterministic built-in extractor (graph.config `extractor: builtin`): no model, so the same
// input always yields the same entities and facts. Pure functions, tested in extract.test.ts.

export interface ExtractedEntity { name: string; kind: string }
export interface ExtractedFact {
  fact: string;
  relation: string;
  /** Entity names (of `entities`) the fact links; null when it names none. */
  source: string | null;
  target: string | null;
  validAt?: string | null;
  invalidAt?: string | null;
}
export interface Extraction { entities: ExtractedEntity[]; facts: ExtractedFact[] }

const MAX_FACTS = 200;
const MAX_ENTITIES = 100;
/** A fact longer than this is cut: it still quotes the start of its source. */
export const MAX_FACT_CHARS = 20_000;

const clip = (text: string, max = MAX_FACT_CHARS) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);
const flat = (text: string) => text.replace(/\s+/g, ' ').trim();

/** Whether `index` starts a sentence (text start, or after . ! ? and spaces): capitals there prove nothing. */
const startsSentence = (text: string, index: number) => /(^|[.!?。！？\n])\s*$/u.test(text.slice(Math.max(0, index - 8), index));

/**
 * Quoted phrases and capitalised words (runs of them on one line): the names an episode talks
 * about, in order of appearance. A lone capitalised word opening a sentence ("The", "They") is not one.
 */
function namesIn(text: string): string[] {
  const names = new Set<string>();
  for (const match of text.matchAll(/"([^"\n]{1,80})"|\b(\p{Lu}[\p{L}\p{N}_-]+(?:[ \t]+\p{Lu}[\p{L}\p{N}_-]+)*)/gu)) {
    const name = flat(match[1] ?? match[2] ?? '');
    const loneOpener = match[2] !== undefined && !name.includes(' ') && startsSentence(text, match.index);
    if (name.length >= 2 && !loneOpener) names.add(name);
    if (names.size >= MAX_ENTITIES) break;
  }
  return [...names];
}

/** A hand-submitted episode: each sentence or line is a fact; it links the first two names it mentions. */
export function extractEpisode(name: string, content: string): Extraction {
  const entities = namesIn(`${name}\n${content}`).map((entity) => ({ name: entity, kind: 'mention' }));
  const facts: ExtractedFact[] = [];
  for (const piece of content.split(/(?<=[.!?。！？])\s+|\n+/u)) {
    const sentence = flat(piece);
    if (sentence === '') continue;
    const mentioned = entities.filter((entity) => sentence.includes(entity.name));
    facts.push({ fact: clip(sentence), relation: 'states', source: mentioned[0]?.name ?? null, target: mentioned[1]?.name ?? null });
    if (facts.length >= MAX_FACTS) break;
  }
  return { entities, facts };
}

/** Every string of a block's config, depth first (templates, prompts, expressions, URLs …). */
function stringsOf(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value);
  else if (typeof value === 'number' || typeof value === 'boolean') out.push(String(value));
  else if (Array.isArray(value)) value.forEach((item) => stringsOf(item, out));
  else if (value && typeof value === 'object') Object.values(value).forEach((item) => stringsOf(item, out));
  return out;
}

interface BlockLike { id?: unknown; type?: unknown; name?: unknown; config?: unknown }

/** `[type] name: texts` for each block of a graph (stored graphs are JSON: read defensively). */
export function blockTexts(graph: unknown): string[] {
  const blocks = (graph as { blocks?: unknown } | null)?.blocks;
  if (!Array.isArray(blocks)) return [];
  return (blocks as BlockLike[]).map((block) => {
    const label = [block.type, block.name || block.id].filter((part) => typeof part === 'string' && part !== '').join(' ');
    return flat(`[${label}] ${stringsOf(block.config).join(' ')}`);
  });
}

/** One fact per document quoting its name and its blocks' text (CONTRACTS.md "Project graph"). */
export function describeDocument(name: string, graph: unknown): ExtractedFact {
  const blocks = blockTexts(graph);
  const body = blocks.length > 0 ? `has blocks: ${blocks.join('; ')}` : 'has no blocks';
  return { fact: clip(`Document "${name}" ${body}`), relation: 'document_content', source: name, target: null };
}

/** A published version: what it runs (its snapshot's blocks) under which version and visibility. */
export function describeDeployment(documentName: string, version: string, visibility: string, snapshot: unknown): ExtractedFact {
  const blocks = blockTexts(snapshot);
  return {
    fact: clip(`Deployment v${version} (${visibility}) of document "${documentName}" runs blocks: ${blocks.join('; ') || 'none'}`),
    relation: 'deployment_of', source: `v${version}`, target: documentName,
  };
}

/** A stored file: its name, type and size, and the start of its text when it is text. */
export function describeFile(name: string, contentType: string, size: number, text: string | null): ExtractedFact {
  const head = `File "${name}" (${contentType}, ${size} bytes)`;
  return { fact: clip(text ? `${head} contains: ${flat(text)}` : head), relation: 'file_content', source: name, target: null };
}
