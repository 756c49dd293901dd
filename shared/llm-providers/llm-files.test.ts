import { describe, expect, it } from 'vitest';
import { resolveIoBlock } from '../app-runs/evaluate.js';
import { deriveApiSchema, graphSchema, validateGraph, type Graph } from '../documents/graph-schema.js';
import { globMatches, modelReadsPdf, pdfOmittedHint, sniffMime } from './llm-files.js';
import { resolveSiteSetting } from '../site-settings/schemas.js';

const bytes = (...parts: Array<string | number[]>) =>
  Uint8Array.from(parts.flatMap((p) => (typeof p === 'string' ? Array.from(p, (c) => c.charCodeAt(0)) : p)));

describe('sniffMime: the file type from its magic bytes', () => {
  it.each([
    ['%PDF-1.7 …', bytes('%PDF-1.7\n'), 'application/pdf'],
    ['the PNG signature', bytes([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]), 'image/png'],
    ['FF D8 FF', bytes([0xff, 0xd8, 0xff, 0xe0, 0, 16]), 'image/jpeg'],
    ['RIFF….WEBP', bytes('RIFF', [1, 2, 3, 4], 'WEBPVP8 '), 'image/webp'],
    ['GIF87a', bytes('GIF87a', [1, 0]), 'image/gif'],
    ['GIF89a', bytes('GIF89a', [1, 0]), 'image/gif'],
  ])('%s', (_name, input, mime) => {
    expect(sniffMime(input)).toBe(mime);
  });

  it.each([
    ['text', bytes('hello world')],
    ['empty', bytes()],
    ['a truncated PNG signature', bytes([0x89, 0x50, 0x4e, 0x47])],
    ['RIFF that is not WEBP (WAVE)', bytes('RIFF', [1, 2, 3, 4], 'WAVEfmt ')],
    ['%PDF without the dash', bytes('%PDF1.4')],
  ])('unknown: %s', (_name, input) => {
    expect(sniffMime(input)).toBeNull();
  });
});

describe('llm_block.pdf_support', () => {
  it('globs: * is any run of characters, whole text, case-insensitive', () => {
    expect(globMatches('gpt-4o*', 'gpt-4o-mini')).toBe(true);
    expect(globMatches('gpt-4o*', 'GPT-4o')).toBe(true);
    expect(globMatches('gpt-4o', 'gpt-4o-mini')).toBe(false);
    expect(globMatches('*.openai.azure.com', 'acme.openai.azure.com')).toBe(true);
    expect(globMatches('*.openai.azure.com', 'openai.azure.com')).toBe(false);
    expect(globMatches('a*b*c', 'abc')).toBe(true);
    expect(globMatches('a*b*c', 'axxbyyc')).toBe(true);
    expect(globMatches('a*b*c', 'acb')).toBe(false);
    expect(globMatches('ab*ba', 'aba')).toBe(false);
    expect(globMatches('*', '')).toBe(true);
  });

  it('the first matching rule decides; provider globs match the host; no match means no PDF', () => {
    const rules = [
      { provider: 'api.example.com', model: 'gpt-4o-mini', pdf: false },
      { model: 'gpt-4o*', pdf: true },
      { provider: '127.0.0.*', model: '*', pdf: true },
    ];
    expect(modelReadsPdf(rules, { providerHost: 'api.openai.com', model: 'gpt-4o-mini' })).toBe(true);
    expect(modelReadsPdf(rules, { providerHost: 'api.example.com', model: 'gpt-4o-mini' })).toBe(false);
    expect(modelReadsPdf(rules, { providerHost: '127.0.0.1', model: 'anything' })).toBe(true);
    expect(modelReadsPdf(rules, { providerHost: 'api.openai.com', model: 'anything' })).toBe(false);
    expect(modelReadsPdf([], { providerHost: 'api.openai.com', model: 'gpt-4o' })).toBe(false);
  });

  it('defaults: OpenAI vision models read PDFs, others do not; a bad value falls back to the defaults', () => {
    const defaults = resolveSiteSetting('llm_block.pdf_support', undefined);
    expect(modelReadsPdf(defaults, { providerHost: 'api.openai.com', model: 'gpt-4o-2024-08-06' })).toBe(true);
    expect(modelReadsPdf(defaults, { providerHost: 'api.openai.com', model: 'gpt-3.5-turbo' })).toBe(false);
    expect(resolveSiteSetting('llm_block.pdf_support', [{ model: 'x', pdf: 'yes' }])).toEqual(defaults);
    expect(resolveSiteSetting('llm_block.pdf_support', [{ model: 'x', pdf: true, extra: 1 }])).toEqual(defaults);
    expect(resolveSiteSetting('llm_block.pdf_support', [])).toEqual([]);
  });

  it('the hint text', () => {
    expect(pdfOmittedHint('report.pdf')).toBe('[PDF "report.pdf" omitted: this model cannot read PDF files]');
  });
});

describe('llm block `files` in the graph format', () => {
  const graphWith = (files: unknown, extra: object[] = []): Graph => graphSchema.parse({
    blocks: [
      { id: 'doc', type: 'input', name: 'document', config: { valueType: 'pdf', required: true } },
      { id: 'photo', type: 'input', name: 'photo', config: { valueType: 'file', default: 'wf-file:00000000-0000-4000-8000-000000000000' } },
      { id: 'n', type: 'input', name: 'n', config: { valueType: 'number' } },
      { id: 't', type: 'template', name: 't', config: { template: 'x' } },
      { id: 'l', type: 'llm', name: 'l', config: { model: 'm', prompt: 'Describe', files } },
      ...extra,
    ],
  });

  it('a list of input blocks (by id, or name) validates, and those inputs join the API schema', () => {
    const graph = graphWith(['doc', 'photo']);
    expect(validateGraph(graph)).toEqual([]);
    expect(deriveApiSchema(graph).inputs.map((f) => f.blockId)).toEqual(['doc', 'photo']);
    expect(validateGraph(graphWith(['document']))).toEqual([]);
    expect(validateGraph(graphWith(undefined))).toEqual([]);
    expect(deriveApiSchema(graphWith(undefined)).inputs).toEqual([]);
  });

  it.each([
    ['not a list', 'doc', /^config\.files: /],
    ['a non-string entry', [1], /^config\.files\.0: /],
    ['an empty name', [''], /^config\.files\.0: /],
    ['more than 10', Array.from({ length: 11 }, () => 'doc'), /^config\.files: /],
    ['a name of no block', ['ghost'], /^config\.files\.0: 'ghost' names no block$/],
    ['a block that is not an input', ['t'], /^config\.files\.0: 't' is not an input block \(type template\)$/],
    ['an input of another value type', ['n'], /^config\.files\.0: input 'n' has valueType 'number'; files take pdf, file, string inputs$/],
    ['the same input twice', ['doc', 'document'], /^config\.files\.1: input 'document' is listed twice$/],
  ])('refuses %s, naming the llm block', (_name, files, message) => {
    const problems = validateGraph(graphWith(files));
    expect(problems.length).toBeGreaterThan(0);
    expect(problems[0]).toEqual({ blockId: 'l', message: expect.stringMatching(message) });
  });

  it('resolveIoBlock passes the inputs by id, name and default: never their values', () => {
    const graph = graphWith(['document', 'photo']);
    const call = resolveIoBlock(graph.blocks.find((b) => b.id === 'l')!, { graph, outputs: new Map([['doc', 'the PDF text']]), trigger: null });
    expect(call).toEqual({
      kind: 'llm',
      request: {
        model: 'm', prompt: 'Describe',
        files: [{ blockId: 'doc', name: 'document' }, { blockId: 'photo', name: 'photo', default: 'wf-file:00000000-0000-4000-8000-000000000000' }],
      },
    });
    const without = resolveIoBlock(graphWith([]).blocks.find((b) => b.id === 'l')!, { graph, outputs: new Map(), trigger: null });
    expect(without.request).not.toHaveProperty('files');
  });
});
