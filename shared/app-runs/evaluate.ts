import { ActivityFailure } from '@temporalio/common';
import jsonata from 'jsonata';
import { configOf, isJsonataValue, resolveReference, type Block, type Graph } from '../documents/graph.js';
import { isClaim, type Claim } from './claims.js';
import { isFileHandle } from '../storage/handles.js';
import type { HttpBlockRequest, LlmBlockRequest, LlmFileInput } from './contracts.js';

// Pure evaluation of the blocks that run inside workflow code (input, template, condition,
// transform, output). No I/O and no clocks: the same graph, inputs and outputs give the same result
// on every replay.

/** What a block can read: the graph (for name fallback), the outputs so far (by block id), the trigger. */
export interface EvaluationContext {
  graph: Graph;
  outputs: ReadonlyMap<string, unknown>;
  trigger: unknown;
  /** How JSONata is bounded; workflow code leaves it unset (the budget below). */
  jsonataGuard?: JsonataGuard;
}

/**
 * Workflow code has no clock, and under the SDK's promise hook (a stack trace per promise) a JSONata
 * step cost about 60 µs against about 1 µs outside (10-frame traces; the sandbox now keeps 3,
 * workflows/stack-trace-limit.ts). There an expression gets a budget: evaluation
 * steps, and items it produces or reads (array elements, string characters); one that needs more is
 * evaluated again by a local activity, bounded by JSONata's own timeout. Either way no expression
 * runs near the 5 s deadlock timeout of a workflow task, past which the SDK stops the sandbox
 * mid-evaluation and Node aborts the whole worker ("async hook stack has become corrupted").
 * The app-runs worker now runs without that hook (worker/create-workers.ts); the budget stays, as
 * other workers keep it and an expression's cost is unbounded either way.
 */
export type JsonataGuard = { maxSteps: number; maxItems: number } | { timeoutMs: number };
// Measured under a stack-capturing promise hook, with the awaited hooks that counted then: 5,000
// steps ≈ 0.3 s, 1,000,000 items ≈ 15 ms; counted through getters, a step costs less.
export const WORKFLOW_JSONATA_GUARD: JsonataGuard = { maxSteps: 5_000, maxItems: 1_000_000 };
export const ACTIVITY_JSONATA_GUARD: JsonataGuard = { timeoutMs: 3_000 };

/** An expression that needs more than workflow code allows: the block is evaluated by an activity. */
export class WorkflowBudgetExceeded extends Error {
  override readonly name = 'WorkflowBudgetExceeded';
}

/** JSONata's hook after every node of the expression, awaited: under the SDK's promise hook, a stack trace per call. */
const EVALUATE_EXIT = Symbol.for('jsonata.__evaluate_exit') as unknown as string;

/**
 * Counts a workflow-code evaluation against the budget without a promise per step. JSONata reads
 * `options.timeout` synchronously at every evaluation step (its guardrails) and `options.sequence`
 * at every push into a result sequence: getters on the options count steps and items (and turn the
 * timeout off: workflow code has no clock). Its entry and exit hooks would do the same, but they
 * are awaited, and each await is a promise whose stack trace the SDK records: they made a pure
 * block cost 2.4–2.5 ms instead of under 1 (bench, per block of a 21-block chain). Only an expression that can make a large value in one
 * step (a range, or a call: `$pad`, `$split`, a lambda) also gets the exit hook, which counts the
 * items of every result.
 */
function budgetedOptions(limits: { stack: number; sequence: number }, { maxSteps, maxItems }: { maxSteps: number; maxItems: number }) {
  let steps = 0;
  let items = 0;
  const countItems = (count: number) => {
    items += count;
    if (items > maxItems) throw new WorkflowBudgetExceeded(`more than ${maxItems} JSONata items`);
  };
  const options = {
    stack: limits.stack,
    get sequence() {
      countItems(1);
      return limits.sequence;
    },
    get timeout() {
      if (++steps > maxSteps) throw new WorkflowBudgetExceeded(`more than ${maxSteps} JSONata steps`);
      return 0;
    },
  };
  const countResults = (compiled: jsonata.Expression) => compiled.assign(EVALUATE_EXIT, (_expr: unknown, _input: unknown, _environment: unknown, result: unknown) => {
    countItems(Array.isArray(result) || typeof result === 'string' ? result.length : 0);
  });
  return { options: options as jsonata.JsonataOptions, countResults };
}

/** Whether a parsed expression has a node that can make a large value in one step: a range, or a call of any kind. */
function mayGrowInOneStep(node: unknown, seen = new Set<object>()): boolean {
  if (node === null || typeof node !== 'object' || seen.has(node)) return false;
  seen.add(node);
  const { type, value } = node as { type?: unknown; value?: unknown };
  if (type === 'function' || type === 'partial' || type === 'lambda' || type === 'apply' || (type === 'binary' && value === '..')) return true;
  return Object.values(node).some((child) => mayGrowInOneStep(child, seen));
}

/** A block that cannot produce an output; its message becomes the `block_error` event. */
export class BlockFailure extends Error {
  override readonly name = 'BlockFailure';
}

// Same shape as the references `referencesOf` finds in templates (shared/documents/graph.ts).
const TEMPLATE_REF = /\{\{\s*([A-Za-z_][A-Za-z0-9_-]*)((?:\.[A-Za-z0-9_-]+)*)\s*\}\}/g;
const SINGLE_TEMPLATE_REF = /^\{\{\s*([A-Za-z_][A-Za-z0-9_-]*)((?:\.[A-Za-z0-9_-]+)*)\s*\}\}$/;

/** A reference root: `_trigger`, a block id, or (older documents) a block name. */
export function lookupRoot(context: EvaluationContext, root: string): unknown {
  if (root === '_trigger') return context.trigger;
  const block = resolveReference(context.graph, root);
  return block ? context.outputs.get(block.id) : undefined;
}

function followPath(value: unknown, path: string[]): unknown {
  let current = value;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

function textOf(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/**
 * `{{ref}}` / `{{ref.path.to}}`. A template that is exactly one reference yields the referenced value
 * unchanged (any JSON; null when it names nothing); otherwise a string, objects JSON-stringified.
 */
export function renderTemplate(template: string, context: EvaluationContext): unknown {
  const single = SINGLE_TEMPLATE_REF.exec(template);
  const resolve = (root: string, dotted: string) => followPath(lookupRoot(context, root), dotted ? dotted.slice(1).split('.') : []);
  if (single) return resolve(single[1]!, single[2] ?? '') ?? null;
  return template.replace(TEMPLATE_REF, (_match, root: string, dotted: string) => textOf(resolve(root, dotted)));
}

/** Variables of a JSONata expression: every output by name (older documents), then by id (ids win), and `_trigger`. */
export function jsonataBindings(context: EvaluationContext): Record<string, unknown> {
  const bindings: Record<string, unknown> = {};
  for (const block of context.graph.blocks) {
    if (block.name && context.outputs.has(block.id) && !(block.name in bindings)) bindings[block.name] = context.outputs.get(block.id);
  }
  for (const [id, output] of context.outputs) bindings[id] = output;
  bindings._trigger = context.trigger;
  return bindings;
}

// Depth and sequence guardrails hold everywhere; time is bounded by the context's guard.
const JSONATA_LIMITS = { stack: 500, sequence: 200_000 };

/** Evaluates JSONata; the result is plain JSON (undefined → null, JSONata sequences → arrays). */
export async function evaluateJsonata(expression: string, context: EvaluationContext): Promise<unknown> {
  const guard = context.jsonataGuard ?? WORKFLOW_JSONATA_GUARD;
  let result: unknown;
  try {
    const bindings = jsonataBindings(context);
    if ('timeoutMs' in guard) {
      result = await jsonata(expression, { ...JSONATA_LIMITS, timeout: guard.timeoutMs } as jsonata.JsonataOptions).evaluate(bindings, bindings);
    } else {
      const budget = budgetedOptions(JSONATA_LIMITS, guard);
      const compiled = jsonata(expression, budget.options);
      if (mayGrowInOneStep(compiled.ast())) budget.countResults(compiled);
      result = await compiled.evaluate(bindings, bindings);
    }
  } catch (error) {
    if (error instanceof WorkflowBudgetExceeded) throw error;
    throw new BlockFailure(`JSONata: ${errorMessage(error)}`);
  }
  return result === undefined ? null : (JSON.parse(JSON.stringify(result) ?? 'null') as unknown);
}

/** JSONata's `$boolean` rules, so a condition reads the way JSONata authors expect. */
export function toBoolean(value: unknown): boolean {
  if (value === null || value === undefined) return false;
  if (Array.isArray(value)) return value.some(toBoolean);
  if (typeof value === 'object') return Object.keys(value).length > 0;
  if (typeof value === 'string') return value.length > 0;
  if (typeof value === 'number') return value !== 0 && !Number.isNaN(value);
  return Boolean(value);
}

/** An input block's value: by name, then by id, then the configured default; null when absent. */
export function inputValue(block: Block, inputs: Record<string, unknown>): unknown {
  const config = configOf(block as Block & { type: 'input' });
  return inputs[block.name] ?? inputs[block.id] ?? config.default ?? null;
}

const PDF_DATA_URI = 'data:application/pdf;base64,';
// base64 of the `%PDF-` header.
const PDF_BASE64_MAGIC = 'JVBERi0';

/**
 * For an `input` block of `valueType: 'pdf'`: the value to convert to text by the `extractPdfText`
 * activity (a file handle, a `data:application/pdf;base64,` URI, or bare base64 that starts with
 * the `%PDF-` header, or a claim: the activity reads the stored value and decides), or null when
 * the block's output is its value as is (other input types, and text that is not a PDF, which
 * stays plain text).
 */
export function pdfInputSource(block: Block, inputs: Record<string, unknown>): string | Claim | null {
  if (block.type !== 'input') return null;
  let value: unknown;
  try {
    if (configOf(block as Block & { type: 'input' }).valueType !== 'pdf') return null;
    value = inputValue(block, inputs);
  } catch {
    return null; // evaluateBlock reports the invalid config
  }
  return isClaim(value) ? value : pdfSourceOf(value);
}

/** A PDF input's value as the text `extractPdfText` converts, or null when it is not a PDF. */
export function pdfSourceOf(value: unknown): string | null {
  const candidate = value !== null && typeof value === 'object' && (value as { _type?: unknown })._type === 'pdf'
    ? (value as { value?: unknown }).value
    : value;
  if (typeof candidate !== 'string') return null;
  const text = candidate.trim();
  return isFileHandle(text) || text.startsWith(PDF_DATA_URI) || text.startsWith(PDF_BASE64_MAGIC) ? text : null;
}

/** An `input` block of `valueType: 'pdf'` whose value is `{ _type: 'pdf', value: <text> }` outputs that text. */
export function plainPdfInput(value: unknown): unknown {
  return value !== null && typeof value === 'object' && (value as { _type?: unknown })._type === 'pdf' && typeof (value as { value?: unknown }).value === 'string'
    ? (value as { value: string }).value
    : value;
}

/** Runs one pure block. Throws `BlockFailure` for anything the block cannot do. */
export async function evaluateBlock(block: Block, context: EvaluationContext, inputs: Record<string, unknown>): Promise<unknown> {
  const parse = <T>(read: () => T): T => {
    try {
      return read();
    } catch (error) {
      throw new BlockFailure(`invalid ${block.type} config: ${errorMessage(error)}`);
    }
  };
  switch (block.type) {
    case 'input': {
      const value = parse(() => inputValue(block, inputs));
      return parse(() => configOf(block as Block & { type: 'input' })).valueType === 'pdf' ? plainPdfInput(value) : value;
    }
    case 'template':
      return renderTemplate(parse(() => configOf(block as Block & { type: 'template' })).template, context);
    case 'condition':
      return toBoolean(await evaluateJsonata(parse(() => configOf(block as Block & { type: 'condition' })).expression, context));
    case 'transform':
      return evaluateJsonata(parse(() => configOf(block as Block & { type: 'transform' })).expression, context);
    case 'output': {
      const { value } = parse(() => configOf(block as Block & { type: 'output' }));
      return isJsonataValue(value) ? evaluateJsonata(value.slice(1), context) : renderTemplate(value, context);
    }
    default:
      throw new BlockFailure(`block type '${block.type}' is not supported by the run engine yet`);
  }
}

/** A message fit for callers: one line, no stack, at most 500 characters. */
export function sanitizeError(message: string, limit = 500): string {
  // eslint-disable-next-line no-control-regex
  const oneLine = message.replace(/[\u0000-\u001f\u007f]+/g, ' ').replace(/\s+/g, ' ').trim() || 'unknown error';
  return oneLine.length <= limit ? oneLine : `${oneLine.slice(0, limit - 1)}…`;
}

/** JSONata throws plain objects with `message`/`code`; everything else is an Error or a value. */
export function errorMessage(error: unknown): string {
  // An activity's failure arrives wrapped ("Activity task failed"); the cause says what went wrong.
  if (error instanceof ActivityFailure && error.cause) return errorMessage(error.cause);
  if (error && typeof error === 'object') {
    const { message, code } = error as { message?: unknown; code?: unknown };
    if (typeof message === 'string' && message) return typeof code === 'string' ? `${message} (${code})` : message;
    if (typeof code === 'string') return `error ${code}`;
  }
  return String(error);
}

/** What an I/O block asks its activity to do, with every template already rendered. */
export type IoBlockCall =
  | { kind: 'llm'; request: Omit<LlmBlockRequest, 'runId' | 'blockId'> }
  | { kind: 'http'; request: Omit<HttpBlockRequest, 'runId' | 'blockId'> };

const asText = (value: unknown): string => (typeof value === 'string' ? value : value === null || value === undefined ? '' : JSON.stringify(value));

/**
 * The input blocks an `llm` block's `files` name (by id, or by name for older documents). Only
 * their names cross the workflow: the activity reads each raw value (not a PDF input's text) from
 * the run's inputs, so no file enters workflow history.
 */
function llmFileInputs(names: string[], graph: Graph): LlmFileInput[] {
  return names.map((name) => {
    const target = resolveReference(graph, name);
    if (target?.type !== 'input') throw new Error(`files: '${name}' names no input block`);
    const fallback = configOf(target as Block & { type: 'input' }).default;
    return { blockId: target.id, name: target.name, ...(fallback !== undefined ? { default: fallback } : {}) };
  });
}

/** Renders an `llm` or `http` block's templates in workflow code; the activity gets plain values. */
export function resolveIoBlock(block: Block, context: EvaluationContext): IoBlockCall {
  try {
    if (block.type === 'llm') {
      const c = configOf(block as Block & { type: 'llm' });
      return {
        kind: 'llm',
        request: {
          model: c.model, prompt: asText(renderTemplate(c.prompt, context)),
          ...(c.system !== undefined ? { system: asText(renderTemplate(c.system, context)) } : {}),
          ...(c.temperature !== undefined ? { temperature: c.temperature } : {}),
          ...(c.maxTokens !== undefined ? { maxTokens: c.maxTokens } : {}),
          ...(c.provider !== undefined ? { provider: c.provider } : {}),
          ...(c.files?.length ? { files: llmFileInputs(c.files, context.graph) } : {}),
        },
      };
    }
    const c = configOf(block as Block & { type: 'http' });
    const headers = Object.fromEntries(Object.entries(c.headers ?? {}).map(([k, v]) => [k, asText(renderTemplate(v, context))]));
    const body = typeof c.body === 'string' ? renderTemplate(c.body, context) : c.body;
    return { kind: 'http', request: { method: c.method, url: asText(renderTemplate(c.url, context)), headers, body } };
  } catch (error) {
    throw new BlockFailure(`invalid ${block.type} config: ${errorMessage(error)}`);
  }
}
