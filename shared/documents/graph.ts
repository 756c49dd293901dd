// The workflow graph format of CONTRACTS.md, the part the run workflow reads. Pure code with no
// runtime dependencies: workflow modules are evaluated again for every run, so the zod schemas live
// in graph-schema.ts (publish time and the run plan's load) and only their types are imported here.
import type { BlockConfig, Block, Graph } from './graph-schema.js';

export type { Block, BlockConfig, Edge, Graph } from './graph-schema.js';

export const blockTypes = ['input', 'template', 'condition', 'transform', 'llm', 'http', 'output', 'wait', 'approval'] as const;
export type BlockType = (typeof blockTypes)[number];
export const inputValueTypes = ['string', 'number', 'boolean', 'object', 'array', 'pdf', 'file'] as const;
export type InputValueType = (typeof inputValueTypes)[number];

/** Block types whose events reach the caller's stream and `sessions[]`; the others are internal. */
export const streamedBlockTypes: ReadonlySet<BlockType> = new Set(['transform', 'llm', 'http', 'output', 'wait', 'approval']);

/** Block types that pause the run (docs/long-runs.md): a durable timer, or a person's decision. */
export const waitingBlockTypes: ReadonlySet<BlockType> = new Set(['wait', 'approval']);

/**
 * A block's config by its type. The run plan's graph has every config parsed with its schema
 * (defaults filled in) by `parseRunnableGraph`, so workflow code reads it as it is.
 */
export function configOf<T extends BlockType>(block: Block & { type: T }): BlockConfig<T> {
  return block.config as BlockConfig<T>;
}

const TEMPLATE_REF = /\{\{\s*([A-Za-z_][A-Za-z0-9_-]*)((?:\.[A-Za-z0-9_-]+)*)\s*\}\}/g;
// `$name` not followed by `(`: a variable, not a JSONata function call such as `$string(…)`.
const JSONATA_VAR = /\$([A-Za-z_][A-Za-z0-9_]*)\b(?!\s*\()/g;

/** Whether an output value is JSONata (`=…`) rather than a template. */
export const isJsonataValue = (value: string) => value.startsWith('=');

/** Root names a block reads (`{{q}}`, `{{x.greeting}}`, `$q`), in order of first use. */
export function referencesOf(block: Block): string[] {
  const roots = new Set<string>();
  const fromTemplate = (text: unknown) => {
    if (typeof text !== 'string') return;
    for (const m of text.matchAll(TEMPLATE_REF)) roots.add(m[1]!);
  };
  const fromJsonata = (text: unknown) => {
    if (typeof text !== 'string') return;
    for (const m of text.matchAll(JSONATA_VAR)) roots.add(m[1]!);
  };
  const c = block.config as Record<string, unknown>;
  switch (block.type) {
    case 'template': fromTemplate(c.template); break;
    case 'condition': case 'transform': fromJsonata(c.expression); break;
    case 'llm': fromTemplate(c.prompt); fromTemplate(c.system); break;
    case 'http':
      fromTemplate(c.url);
      for (const v of Object.values((c.headers as Record<string, unknown>) ?? {})) fromTemplate(v);
      fromTemplate(typeof c.body === 'string' ? c.body : JSON.stringify(c.body ?? ''));
      break;
    case 'output':
      if (typeof c.value === 'string' && isJsonataValue(c.value)) fromJsonata(c.value.slice(1));
      else fromTemplate(c.value);
      break;
    case 'wait': fromTemplate(c.seconds); fromTemplate(c.until); break;
    case 'approval': fromTemplate(c.prompt); break;
    case 'input': break;
  }
  return [...roots];
}

/** A reference names a block by id; older documents name it by its `name`. */
export function resolveReference(graph: Graph, root: string): Block | undefined {
  return graph.blocks.find((b) => b.id === root) ?? graph.blocks.find((b) => b.name === root);
}

/** A run input as the stored API schema lists it (§4.1 rule 1). */
export interface ApiSchemaField {
  blockId: string;
  name: string;
  valueType: InputValueType;
  required: boolean;
  default?: unknown;
}
