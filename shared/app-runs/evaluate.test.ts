import { describe, expect, it } from 'vitest';
import type { Graph } from '../documents/graph.js';
import { ACTIVITY_JSONATA_GUARD, WorkflowBudgetExceeded, evaluateBlock, evaluateJsonata, pdfInputSource, renderTemplate, resolveIoBlock, sanitizeError, toBoolean, type EvaluationContext } from './evaluate.js';

const graph: Graph = {
  blocks: [
    { id: 'q', type: 'input', name: 'name', config: { valueType: 'string' } },
    { id: 'n', type: 'input', name: 'n', config: { valueType: 'number', default: 1 } },
    { id: 'x', type: 'transform', name: 'shape', config: { expression: "{ 'greeting': 'hello ' & $q, 'n': $n * 2 }" } },
  ],
  edges: [],
};

function contextWith(outputs: Record<string, unknown>, trigger: unknown = { source: 'api' }): EvaluationContext {
  return { graph, outputs: new Map(Object.entries(outputs)), trigger };
}

describe('templates', () => {
  const context = contextWith({ q: 'Ada', n: 21, x: { greeting: 'hello Ada', nested: { deep: [1, 2] } } });

  it('keeps the referenced value unchanged when the template is exactly one reference', () => {
    expect(renderTemplate('{{x}}', context)).toEqual({ greeting: 'hello Ada', nested: { deep: [1, 2] } });
    expect(renderTemplate('{{ n }}', context)).toBe(21);
    expect(renderTemplate('{{x.nested.deep}}', context)).toEqual([1, 2]);
  });

  it('stringifies when references are mixed with text', () => {
    expect(renderTemplate('Hi {{q}}, n={{n}}', context)).toBe('Hi Ada, n=21');
    expect(renderTemplate('ctx: {{x.nested}}', context)).toBe('ctx: {"deep":[1,2]}');
    expect(renderTemplate('{{q}}{{q}}', context)).toBe('AdaAda');
  });

  it('follows paths, and yields null / empty text for what does not exist', () => {
    expect(renderTemplate('{{x.greeting}}', context)).toBe('hello Ada');
    expect(renderTemplate('{{x.nested.deep.1}}', context)).toBe(2);
    expect(renderTemplate('{{x.missing.deeper}}', context)).toBeNull();
    expect(renderTemplate('[{{x.missing}}]', context)).toBe('[]');
    expect(renderTemplate('{{nobody}}', context)).toBeNull();
  });

  it('falls back to a block name when no block has that id', () => {
    expect(renderTemplate('{{name}} / {{shape.greeting}}', context)).toBe('Ada / hello Ada');
  });

  it('reads the trigger context', () => {
    expect(renderTemplate('from {{_trigger.source}}', context)).toBe('from api');
    expect(renderTemplate('{{_trigger}}', context)).toEqual({ source: 'api' });
  });
});

describe('JSONata', () => {
  const context = contextWith({ q: 'Ada', n: 21 }, { source: 'schedule', schedule_id: 's1' });

  it('binds outputs by id, by name, and _trigger', async () => {
    expect(await evaluateJsonata("{ 'greeting': 'hello ' & $q, 'n': $n * 2 }", context)).toEqual({ greeting: 'hello Ada', n: 42 });
    expect(await evaluateJsonata('$name & "!"', context)).toBe('Ada!');
    expect(await evaluateJsonata('$_trigger.source', context)).toBe('schedule');
  });

  it('returns plain JSON: sequences become arrays, nothing becomes null', async () => {
    const result = await evaluateJsonata('[1,2,3].($ * 2)', context);
    expect(result).toEqual([2, 4, 6]);
    expect(Object.keys(result as object)).toEqual(['0', '1', '2']);
    expect(await evaluateJsonata('$nothing', context)).toBeNull();
  });

  it('fails with the JSONata message', async () => {
    await expect(evaluateJsonata('$q + 1', context)).rejects.toThrow(/JSONata: .*T2001/);
    await expect(evaluateJsonata('{ broken', context)).rejects.toThrow(/JSONata:/);
  });

  it('bounds an expression: a step budget in workflow code, a timeout in an activity', async () => {
    const mapTenThousand = '$sum([1..10000].($ * 2))';
    await expect(evaluateJsonata(mapTenThousand, context)).rejects.toBeInstanceOf(WorkflowBudgetExceeded);
    await expect(evaluateJsonata(mapTenThousand, { ...context, jsonataGuard: ACTIVITY_JSONATA_GUARD })).resolves.toBe(100010000);
    // Few steps over many items: counted too (each inner range is 100,000 elements).
    await expect(evaluateJsonata('$sum([1..20].($sum([1..100000])))', context)).rejects.toBeInstanceOf(WorkflowBudgetExceeded);
    await expect(evaluateJsonata('$length($pad("", 2000000))', context)).rejects.toBeInstanceOf(WorkflowBudgetExceeded);
    // Without a call or a range, a path over variables still multiplies: its steps are counted (without a hook).
    const wide = contextWith({ w: Array.from({ length: 30 }, (_, i) => i) });
    await expect(evaluateJsonata('$w.$w.$w.$w', wide)).rejects.toBeInstanceOf(WorkflowBudgetExceeded);
    await expect(evaluateJsonata('$count($w.$w)', wide)).resolves.toBe(900);
    // Within the budget nothing changes; a runaway expression fails the block once its time is up.
    await expect(evaluateJsonata('$sum([1..100])', context)).resolves.toBe(5050);
    await expect(evaluateJsonata('$sum([1..100000].($sum([1..100000])))', { ...context, jsonataGuard: { timeoutMs: 50 } }))
      .rejects.toThrow(/JSONata: .*D1012/);
  });

  it('coerces like $boolean', () => {
    expect([true, 1, 'x', [0, 1], { a: 1 }].map(toBoolean)).toEqual([true, true, true, true, true]);
    expect([false, 0, '', [], {}, null, undefined, [false]].map(toBoolean)).toEqual([false, false, false, false, false, false, false, false]);
  });
});

describe('blocks', () => {
  it('reads inputs by name, then id, then default, else null', async () => {
    const context = contextWith({});
    const [q, n] = graph.blocks as [Graph['blocks'][0], Graph['blocks'][0]];
    expect(await evaluateBlock(q, context, { name: 'Ada', q: 'by id' })).toBe('Ada');
    expect(await evaluateBlock(q, context, { q: 'by id' })).toBe('by id');
    expect(await evaluateBlock(q, context, {})).toBeNull();
    expect(await evaluateBlock(n, context, {})).toBe(1);
    expect(await evaluateBlock(n, context, { n: 0 })).toBe(0);
  });

  it('evaluates conditions to booleans and outputs as templates or =JSONata', async () => {
    const context = contextWith({ n: 21 });
    expect(await evaluateBlock({ id: 'c', type: 'condition', name: '', config: { expression: '$n > 20' } }, context, {})).toBe(true);
    expect(await evaluateBlock({ id: 'c', type: 'condition', name: '', config: { expression: '$n' } }, context, {})).toBe(true);
    expect(await evaluateBlock({ id: 'o', type: 'output', name: '', config: { value: '{{n}}' } }, context, {})).toBe(21);
    expect(await evaluateBlock({ id: 'o', type: 'output', name: '', config: { value: '=$n + 1' } }, context, {})).toBe(22);
  });

  it('refuses block types that are not pure (I/O blocks run as activities)', async () => {
    await expect(evaluateBlock({ id: 'l', type: 'llm', name: '', config: { model: 'm', prompt: 'p' } }, contextWith({}), {}))
      .rejects.toThrow("block type 'llm' is not supported by the run engine yet");
  });
});

describe('sanitizeError', () => {
  it('is one line and at most 500 characters', () => {
    expect(sanitizeError('a\n\tb  c')).toBe('a b c');
    const long = sanitizeError('x'.repeat(2000));
    expect(long).toHaveLength(500);
    expect(long.endsWith('…')).toBe(true);
  });
});

describe('resolveIoBlock: templates of I/O blocks are rendered in workflow code', () => {
  const graph: Graph = {
    blocks: [
      { id: 'q', type: 'input', name: 'question', config: { valueType: 'string' } },
      { id: 'ask', type: 'llm', name: 'ask', config: { model: 'm1', prompt: 'Answer: {{q}}', system: 'Be brief about {{_trigger.source}}', temperature: 0.2 } },
      { id: 'call', type: 'http', name: 'call', config: { method: 'POST', url: 'http://example.test/{{q}}', headers: { 'x-q': '{{q}}' }, body: '{{q}}' } },
    ],
    edges: [],
  };
  const context = { graph, outputs: new Map<string, unknown>([['q', 'why']]), trigger: { source: 'api' } };

  it('llm: prompt and system rendered, options passed', () => {
    expect(resolveIoBlock(graph.blocks[1]!, context)).toEqual({
      kind: 'llm', request: { model: 'm1', prompt: 'Answer: why', system: 'Be brief about api', temperature: 0.2 },
    });
  });
  it('http: url, headers and a string body rendered', () => {
    expect(resolveIoBlock(graph.blocks[2]!, context)).toEqual({
      kind: 'http', request: { method: 'POST', url: 'http://example.test/why', headers: { 'x-q': 'why' }, body: 'why' },
    });
  });
});

describe('PDF inputs', () => {
  const doc = { id: 'd', type: 'input', name: 'doc', config: { valueType: 'pdf' } } as const;
  const handle = 'wf-file:0190a5c4-7e2a-7b1e-9c3d-1234567890ab';

  it('sends file handles, data:application/pdf URIs and %PDF- base64 to the activity', () => {
    expect(pdfInputSource(doc, { doc: { _type: 'pdf', value: handle } })).toBe(handle);
    expect(pdfInputSource(doc, { doc: { _type: 'pdf', value: 'storage://0190a5c4-7e2a-7b1e-9c3d-1234567890ab' } })).toBe('storage://0190a5c4-7e2a-7b1e-9c3d-1234567890ab');
    expect(pdfInputSource(doc, { doc: { _type: 'pdf', value: 'data:application/pdf;base64,AAAA' } })).toBe('data:application/pdf;base64,AAAA');
    expect(pdfInputSource(doc, { doc: 'JVBERi0xLjQK' })).toBe('JVBERi0xLjQK');
  });

  it('keeps other text plain, and leaves other input types alone', async () => {
    expect(pdfInputSource(doc, { doc: { _type: 'pdf', value: 'notes' } })).toBeNull();
    await expect(evaluateBlock(doc, contextWith({}), { doc: { _type: 'pdf', value: 'notes' } })).resolves.toBe('notes');
    expect(pdfInputSource(graph.blocks[0]!, { name: handle })).toBeNull();
    await expect(evaluateBlock(graph.blocks[0]!, contextWith({}), { name: { _type: 'pdf', value: 'x' } })).resolves.toEqual({ _type: 'pdf', value: 'x' });
  });
});
