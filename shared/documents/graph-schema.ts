import { z } from 'zod';
import { blockTypes, inputValueTypes, referencesOf, resolveReference, type ApiSchemaField, type BlockType } from './graph.js';
import { LLM_FILE_INPUT_TYPES, MAX_LLM_FILES } from '../llm-providers/llm-files.js';

// The zod schemas of the graph format (CONTRACTS.md): publish-time validation, the stored API
// schema, and the run plan's config normalization. Kept out of workflow code (see graph.ts).

const blockConfigs = {
  input: z.object({ valueType: z.enum(inputValueTypes), required: z.boolean().default(false), default: z.unknown().optional() }),
  template: z.object({ template: z.string() }),
  condition: z.object({ expression: z.string().min(1) }),
  transform: z.object({ expression: z.string().min(1) }),
  llm: z.object({
    model: z.string().min(1), prompt: z.string(), system: z.string().optional(),
    temperature: z.number().min(0).max(2).optional(), maxTokens: z.number().int().positive().optional(), provider: z.string().optional(),
    /** Input blocks (by id, or name) whose raw values go to the model as files: PDFs and images (docs/app-runs.md). */
    files: z.array(z.string().min(1)).max(MAX_LLM_FILES).optional(),
  }),
  http: z.object({
    method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD']), url: z.string().min(1),
    headers: z.record(z.string(), z.string()).optional(), body: z.unknown().optional(),
  }),
  output: z.object({ value: z.string() }),
  // Long runs (docs/long-runs.md): the limits that need the site settings are checked by wait-block-rules.ts.
  wait: z.object({
    seconds: z.union([z.number().min(0), z.string().min(1)]).optional(),
    until: z.string().min(1).optional(),
  }).refine((c) => (c.seconds === undefined) !== (c.until === undefined), { message: 'a wait takes either seconds or until' }),
  approval: z.object({
    prompt: z.string({ error: 'an approval needs a prompt' }).trim().min(1, 'an approval needs a prompt'),
    timeoutSeconds: z.number().int().positive().optional(),
    fields: z.record(z.string(), z.unknown()).optional(),
  }),
} satisfies Record<BlockType, z.ZodType>;

export const blockSchema = z.object({
  id: z.string().regex(/^[A-Za-z_][A-Za-z0-9_-]{0,63}$/, 'block ids are 1-64 letters, digits, _ or -, starting with a letter or _'),
  type: z.enum(blockTypes),
  name: z.string().max(200).default(''),
  config: z.record(z.string(), z.unknown()).default({}),
});
export const edgeSchema = z.object({ from: z.string(), to: z.string(), when: z.boolean().optional() });
export const graphSchema = z.object({ blocks: z.array(blockSchema).max(500), edges: z.array(edgeSchema).max(2000).default([]) });

export type Block = z.infer<typeof blockSchema>;
export type Edge = z.infer<typeof edgeSchema>;
export type Graph = z.infer<typeof graphSchema>;
export type BlockConfig<T extends BlockType> = z.infer<(typeof blockConfigs)[T]>;

export interface GraphProblem { blockId: string | null; message: string }

/** A block's config parsed with its type's schema (defaults filled in); throws when it is invalid. */
function parseConfig<T extends BlockType>(block: Block & { type: T }): BlockConfig<T> {
  return blockConfigs[block.type].parse(block.config) as BlockConfig<T>;
}

/**
 * A published snapshot as the run workflow needs it: the graph format, and every block config parsed
 * with its schema (defaults filled in). Null when the snapshot does not validate; publish refuses
 * such graphs, so only a damaged row gets here.
 */
export function parseRunnableGraph(snapshot: unknown): Graph | null {
  const graph = graphSchema.safeParse(snapshot);
  if (!graph.success) return null;
  const blocks: Block[] = [];
  for (const block of graph.data.blocks) {
    const config = blockConfigs[block.type].safeParse(block.config);
    if (!config.success) return null;
    blocks.push({ ...block, config: config.data as Record<string, unknown> });
  }
  return { ...graph.data, blocks };
}

/**
 * Structural checks at publish time: configs per type, unique ids, edges between existing blocks,
 * `when` only on edges leaving a condition, no cycles, and references that name a block.
 */
export function validateGraph(graph: Graph): GraphProblem[] {
  const problems: GraphProblem[] = [];
  const byId = new Map<string, Block>();
  for (const block of graph.blocks) {
    if (byId.has(block.id)) problems.push({ blockId: block.id, message: `duplicate block id '${block.id}'` });
    byId.set(block.id, block);
    const parsed = blockConfigs[block.type].safeParse(block.config);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) problems.push({ blockId: block.id, message: `config.${issue.path.join('.')}: ${issue.message}` });
    }
  }
  for (const edge of graph.edges) {
    for (const end of [edge.from, edge.to]) {
      if (!byId.has(end)) problems.push({ blockId: end, message: `edge ${edge.from} → ${edge.to} names a block that does not exist` });
    }
    if (edge.from === edge.to) problems.push({ blockId: edge.from, message: 'a block cannot feed itself' });
    if (edge.when !== undefined && byId.get(edge.from)?.type !== 'condition') {
      problems.push({ blockId: edge.from, message: `edge ${edge.from} → ${edge.to} has 'when' but ${edge.from} is not a condition` });
    }
  }
  if (problems.length === 0) {
    const cycle = findCycle(graph);
    if (cycle) problems.push({ blockId: cycle[0]!, message: `cycle: ${cycle.join(' → ')}` });
  }
  for (const block of graph.blocks) {
    for (const root of referencesOf(block)) {
      if (root !== '_trigger' && !resolveReference(graph, root)) problems.push({ blockId: block.id, message: `reference '${root}' names no block` });
    }
    problems.push(...llmFileProblems(graph, block));
  }
  return problems;
}

/** An `llm` block's `files` as written (the config schema reports a shape that is not a list of names). */
function rawLlmFiles(block: Block): unknown[] {
  const files = block.type === 'llm' ? (block.config as { files?: unknown }).files : undefined;
  return Array.isArray(files) ? files : [];
}
const llmFilesOf = (block: Block): string[] => rawLlmFiles(block).filter((f): f is string => typeof f === 'string' && f !== '');

/** Each entry of an `llm` block's `files` names an `input` block of a file-like value type, once. */
function llmFileProblems(graph: Graph, block: Block): GraphProblem[] {
  const problems: GraphProblem[] = [];
  const seen = new Set<string>();
  for (const [index, name] of rawLlmFiles(block).entries()) {
    if (typeof name !== 'string' || name === '') continue;
    const at = `config.files.${index}`;
    const target = resolveReference(graph, name);
    if (!target || target.type !== 'input') {
      problems.push({ blockId: block.id, message: target ? `${at}: '${name}' is not an input block (type ${target.type})` : `${at}: '${name}' names no block` });
      continue;
    }
    const valueType = (target.config as { valueType?: unknown }).valueType;
    if (typeof valueType === 'string' && !LLM_FILE_INPUT_TYPES.includes(valueType)) {
      problems.push({ blockId: block.id, message: `${at}: input '${name}' has valueType '${valueType}'; files take ${LLM_FILE_INPUT_TYPES.join(', ')} inputs` });
    }
    if (seen.has(target.id)) problems.push({ blockId: block.id, message: `${at}: input '${name}' is listed twice` });
    seen.add(target.id);
  }
  return problems;
}

function findCycle(graph: Graph): string[] | null {
  const next = new Map<string, string[]>();
  for (const e of graph.edges) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  const state = new Map<string, 'visiting' | 'done'>();
  const path: string[] = [];
  const visit = (id: string): string[] | null => {
    if (state.get(id) === 'done') return null;
    if (state.get(id) === 'visiting') return [...path.slice(path.indexOf(id)), id];
    state.set(id, 'visiting');
    path.push(id);
    for (const to of next.get(id) ?? []) {
      const found = visit(to);
      if (found) return found;
    }
    path.pop();
    state.set(id, 'done');
    return null;
  };
  for (const block of graph.blocks) {
    const found = visit(block.id);
    if (found) return found;
  }
  return null;
}

/** The run input schema: only the Input blocks some other block actually reads (§4.1 rule 1). */
export function deriveApiSchema(graph: Graph): { inputs: ApiSchemaField[] } {
  const consumed = new Set<string>();
  for (const block of graph.blocks) {
    if (block.type === 'input') continue;
    for (const root of [...referencesOf(block), ...llmFilesOf(block)]) {
      const target = resolveReference(graph, root);
      if (target?.type === 'input') consumed.add(target.id);
    }
  }
  return {
    inputs: graph.blocks
      .filter((b) => b.type === 'input' && consumed.has(b.id))
      .map((b) => {
        const config = parseConfig(b as Block & { type: 'input' });
        return {
          blockId: b.id, name: b.name || b.id, valueType: config.valueType, required: config.required,
          ...(config.default !== undefined ? { default: config.default } : {}),
        };
      }),
  };
}
