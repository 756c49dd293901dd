import { describe, expect, it } from 'vitest';
import { AppError } from '../errors.js';
import { siteSettingDefinitions } from '../site-settings/schemas.js';
import { checkBodySize, checkInputLimits, inlineBase64DecodedBytes, type InputLimits } from './limits.js';
import { countTokens } from '../llm-providers/tokens.js';

const D: InputLimits = siteSettingDefinitions['run.input_limit'].defaults;
/** Defaults with tokenization out of the way (tokens ≤ bytes ≤ maxTextTokens). */
const noTokens: InputLimits = { ...D, maxTextTokens: 100_000_000 };

function violation(inputs: Record<string, unknown>, limits: InputLimits = D): AppError {
  try {
    checkInputLimits(inputs, limits);
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }
  throw new Error('expected an input limit error');
}

function expectViolation(
  inputs: Record<string, unknown>, limits: InputLimits,
  expected: { error: string; field: string; actual: number; limit: number },
) {
  const err = violation(inputs, limits);
  expect({ status: err.status, error: err.error, ...err.extra }).toEqual({ status: 400, ...expected });
  expect(err.message.length).toBeGreaterThan(0);
}

/** A value whose deepest value is at depth n when placed at `inputs.<key>` (depth 1). */
const nestArrays = (n: number): unknown => {
  let v: unknown = 'x';
  for (let i = 1; i < n; i++) v = [v];
  return v;
};
const nestObjects = (n: number): unknown => {
  let v: unknown = 1;
  for (let i = 1; i < n; i++) v = { k: v };
  return v;
};

/** `data:` URI whose payload decodes to exactly `bytes` bytes (checked against Buffer below). */
const dataUri = (bytes: number, mime = 'application/pdf') => {
  const full = Math.floor(bytes / 3);
  const rest = bytes % 3;
  const payload = 'A'.repeat(full * 4) + (rest === 0 ? '' : rest === 1 ? 'AA==' : 'AAA=');
  return `data:${mime};base64,${payload}`;
};

describe('checkInputLimits: passes', () => {
  it('accepts ordinary inputs, empty inputs and undefined values', () => {
    expect(() => checkInputLimits({}, D)).not.toThrow();
    expect(() => checkInputLimits({ a: undefined }, D)).not.toThrow();
    expect(() => checkInputLimits({
      question: 'What is in this document?',
      n: 3, flag: true, none: null, list: [1, 'two', { three: 3 }],
      doc: { _type: 'pdf', value: 'wf-file:0190a5c4-7e2a-7b1e-9c3d-1234567890ab' },
      _trigger: { source: 'api', triggered_at: '2026-01-01T00:00:00.000Z' },
    }, D)).not.toThrow();
  });
});

describe('depth (input_structure_too_deep)', () => {
  it('32-deep passes and 33-deep fails with the defaults (arrays and objects)', () => {
    expect(() => checkInputLimits({ deep: nestArrays(32) }, D)).not.toThrow();
    expect(() => checkInputLimits({ deep: nestObjects(32) }, D)).not.toThrow();
    expectViolation({ ok: 'x', deep: nestArrays(33) }, D,
      { error: 'input_structure_too_deep', field: 'inputs.deep', actual: 33, limit: 32 });
    expectViolation({ deep: nestObjects(33) }, D,
      { error: 'input_structure_too_deep', field: 'inputs.deep', actual: 33, limit: 32 });
  });
  it('counts a top-level scalar as depth 1 and empty containers as values', () => {
    const one = { ...D, maxDepth: 1 };
    expect(() => checkInputLimits({ a: 'x', b: 1, c: null }, one)).not.toThrow();
    expect(() => checkInputLimits({ a: [] }, one)).not.toThrow();
    expectViolation({ a: [[]] }, one, { error: 'input_structure_too_deep', field: 'inputs.a', actual: 2, limit: 1 });
  });
  it('reports the exact depth and survives very deep inputs without recursion', () => {
    expectViolation({ deep: nestArrays(20_000) }, D,
      { error: 'input_structure_too_deep', field: 'inputs.deep', actual: 20_000, limit: 32 });
  });
});

describe('node count (input_structure_too_large)', () => {
  it('100,000 nodes pass and 100,001 fail with the defaults', () => {
    expect(() => checkInputLimits({ big: new Array(99_999).fill(0) }, D)).not.toThrow();
    expectViolation({ big: new Array(100_000).fill(0) }, D,
      { error: 'input_structure_too_large', field: 'inputs.big', actual: 100_001, limit: 100_000 });
  });
  it('counts every value over all inputs and names the field where the total crossed', () => {
    const small = { ...D, maxNodes: 10 };
    // a: object + 2 property values = 3; b: array + 3 elements + nested value = 5; c: 1 → 9
    const inputs = { a: { x: 1, y: 'z' }, b: [1, 2, { k: true }], c: 'c' };
    expect(() => checkInputLimits(inputs, { ...small, maxNodes: 9 })).not.toThrow();
    expectViolation({ ...inputs, d: [1] }, small,
      { error: 'input_structure_too_large', field: 'inputs.d', actual: 11, limit: 10 });
  });
});

describe('field size (input_field_too_large)', () => {
  it('measures UTF-8 bytes of the field JSON: at the limit passes, one over fails', () => {
    const limits = { ...noTokens, maxFieldBytes: 100, maxTextBytes: 10_000 };
    expect(() => checkInputLimits({ f: 'a'.repeat(98) }, limits)).not.toThrow(); // "…" = 100 bytes
    expectViolation({ f: 'a'.repeat(99) }, limits, { error: 'input_field_too_large', field: 'inputs.f', actual: 101, limit: 100 });
    // 'é' is 2 UTF-8 bytes; a newline is escaped as \n (2 bytes).
    expectViolation({ f: 'é'.repeat(49) + '\n' }, limits, { error: 'input_field_too_large', field: 'inputs.f', actual: 102, limit: 100 });
    // keys and structure count too: {"k":[1,2]} = 11 bytes
    expectViolation({ f: { k: [1, 2] } }, { ...limits, maxFieldBytes: 10 },
      { error: 'input_field_too_large', field: 'inputs.f', actual: 11, limit: 10 });
  });
  it('default 1 MiB boundary', () => {
    expect(() => checkInputLimits({ f: 'a'.repeat(1_048_574) }, noTokens)).not.toThrow();
    expectViolation({ f: 'a'.repeat(1_048_575) }, noTokens,
      { error: 'input_field_too_large', field: 'inputs.f', actual: 1_048_577, limit: 1_048_576 });
  });
  it('is per field: two fields just under the limit each pass the field check', () => {
    const limits = { ...noTokens, maxFieldBytes: 100, maxTextBytes: 10_000 };
    expect(() => checkInputLimits({ a: 'a'.repeat(98), b: 'b'.repeat(98) }, limits)).not.toThrow();
  });
});

// What a handle is: shared/storage/handles.test.ts. Here: that handles are exempt and look-alikes are not.
describe('file handles', () => {
  const limits = { ...noTokens, maxFieldBytes: 20, maxTextBytes: 20 };
  const uuid = (digit: string) => `${digit.repeat(8)}-${digit.repeat(4)}-4${digit.repeat(3)}-8${digit.repeat(3)}-${digit.repeat(12)}`;
  it('do not count toward field or aggregate limits, anywhere in the value', () => {
    expect(() => checkInputLimits({
      doc: { _type: 'pdf', value: `wf-file:${uuid('a')}` },
      files: [`storage://${uuid('b')}`, `wf-file:${uuid('C')}`],
    }, { ...limits, maxFieldBytes: 60 })).not.toThrow(); // {"_type":"pdf","value":""} and ["",""] with the handles emptied
    expect(() => checkInputLimits({ f: `wf-file:${uuid('d')}` }, limits)).not.toThrow();
  });
  it('a handle whose id is not a uuid (no file can have it) counts as text', () => {
    expectViolation({ f: 'wf-file:abc_DEF-123' }, limits, { error: 'input_field_too_large', field: 'inputs.f', actual: 21, limit: 20 });
  });
  it('a 300-character fake handle counts as text', () => {
    const fake = 'wf-file:' + 'a'.repeat(292);
    expectViolation({ f: fake }, limits, { error: 'input_field_too_large', field: 'inputs.f', actual: 302, limit: 20 });
    expectViolation({ f: fake }, { ...limits, maxFieldBytes: 1000 },
      { error: 'prompt_too_large_bytes', field: 'inputs.f', actual: 300, limit: 20 });
  });
  it('a malformed handle counts as text', () => {
    expectViolation({ f: 'wf-file:not a handle!!' }, limits,
      { error: 'input_field_too_large', field: 'inputs.f', actual: 24, limit: 20 });
  });
});

describe('inline base64 (inline_base64_too_large)', () => {
  it('measures the decoded payload size', () => {
    for (const n of [0, 1, 2, 3, 4, 5, 1000, 1_048_576, 1_048_577]) {
      const uri = dataUri(n);
      const payload = uri.slice(uri.indexOf(',') + 1);
      expect(Buffer.from(payload, 'base64').length).toBe(n);
      expect(inlineBase64DecodedBytes(uri)).toBe(n);
    }
    expect(inlineBase64DecodedBytes('data:image/png;base64,iVBORw0KGgo')).toBe(8); // unpadded
    expect(inlineBase64DecodedBytes('DATA:text/plain;charset=utf-8;base64,QUJD')).toBe(3);
    expect(inlineBase64DecodedBytes('data:,hello')).toBeNull(); // not base64
    expect(inlineBase64DecodedBytes('data:text/plain;base64,not base64!')).toBeNull();
    expect(inlineBase64DecodedBytes('see data:text/plain;base64,QUJD')).toBeNull();
  });
  it('default 1 MiB boundary: at the limit passes (and is exempt from field/text limits), one over fails', () => {
    const atLimit = dataUri(1_048_576);
    expect(atLimit.length).toBeGreaterThan(1_398_000); // over the field and text limits if it counted
    expect(() => checkInputLimits({ doc: { _type: 'pdf', value: atLimit } }, D)).not.toThrow();
    expectViolation({ doc: { _type: 'pdf', value: dataUri(1_048_577) } }, D,
      { error: 'inline_base64_too_large', field: 'inputs.doc', actual: 1_048_577, limit: 1_048_576 });
  });
  it('is detected inside nested objects and arrays', () => {
    const limits = { ...D, maxInlineBase64Bytes: 10 };
    expectViolation({ ok: 'text', nested: { list: [1, { deeper: [dataUri(5), dataUri(11, 'image/png')] }] } }, limits,
      { error: 'inline_base64_too_large', field: 'inputs.nested', actual: 11, limit: 10 });
  });
  it('bare base64 is not inline: only the field and aggregate byte limits apply', () => {
    const pdf = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(1_000_000, 7)]).toString('base64');
    expect(pdf.startsWith('JVBERi0')).toBe(true);
    // 1.33 MB of bare base64: field limit, not inline_base64_too_large
    expectViolation({ doc: { _type: 'pdf', value: pdf } }, D,
      { error: 'input_field_too_large', field: 'inputs.doc', actual: pdf.length + '{"_type":"pdf","value":""}'.length, limit: 1_048_576 });
    // within the field limit but over the aggregate text bytes
    const half = pdf.slice(0, 600_000);
    expectViolation({ a: half, b: half }, D,
      { error: 'prompt_too_large_bytes', field: 'inputs.b', actual: 1_200_000, limit: 1_048_576 });
  });
  it('bare binary base64 (file magic) is not tokenized; other base64-looking text is', () => {
    const limits = { ...D, maxTextTokens: 100 };
    const pdf = Buffer.concat([Buffer.from('%PDF-1.4 '), Buffer.alloc(3000, 200)]).toString('base64');
    expect(countTokens(pdf)).toBeGreaterThan(100);
    expect(() => checkInputLimits({ doc: pdf }, limits)).not.toThrow();
    const text = Buffer.alloc(3009, 200).toString('base64'); // no file magic: plain text to the model
    expect(violation({ doc: text }, limits).error).toBe('prompt_too_large_tokens');
  });
});

describe('aggregate text bytes (prompt_too_large_bytes)', () => {
  const limits = { ...noTokens, maxTextBytes: 100 };
  it('sums UTF-8 bytes of all strings in all inputs: at the limit passes, one over fails', () => {
    expect(() => checkInputLimits({ a: 'a'.repeat(60), b: ['b'.repeat(20), { c: 'c'.repeat(20) }] }, limits)).not.toThrow();
    expectViolation({ a: 'a'.repeat(60), b: ['b'.repeat(20), { c: 'c'.repeat(21) }] }, limits,
      { error: 'prompt_too_large_bytes', field: 'inputs.b', actual: 101, limit: 100 });
    expectViolation({ a: 'é'.repeat(51) }, limits, { error: 'prompt_too_large_bytes', field: 'inputs.a', actual: 102, limit: 100 });
  });
  it('does not count keys, numbers, booleans or null', () => {
    expect(() => checkInputLimits({ ['k'.repeat(200)]: 12345678901234, b: true, c: null, d: { ['x'.repeat(200)]: 1 } }, limits)).not.toThrow();
  });
  it('default 1 MiB boundary', () => {
    expect(() => checkInputLimits({ a: 'a'.repeat(600_000), b: 'b'.repeat(448_576) }, noTokens)).not.toThrow();
    expectViolation({ a: 'a'.repeat(600_000), b: 'b'.repeat(448_577) }, noTokens,
      { error: 'prompt_too_large_bytes', field: 'inputs.b', actual: 1_048_577, limit: 1_048_576 });
  });
});

describe('aggregate tokens (prompt_too_large_tokens)', () => {
  it('counts real tokens over all text inputs: at the limit passes, one over fails', () => {
    const words = (n: number) => 'hello' + ' hello'.repeat(n - 1);
    expect(countTokens(words(600))).toBe(600);
    const limits = { ...D, maxTextTokens: 1000 }; // 3,600 + 2,400 bytes > 1000: tokenized
    expect(() => checkInputLimits({ a: words(600), b: [words(400)] }, limits)).not.toThrow();
    expectViolation({ a: words(600), b: [words(401)] }, limits,
      { error: 'prompt_too_large_tokens', field: 'inputs.b', actual: 1001, limit: 1000 });
  });
  it('stops counting once over the limit: actual is the count at that point', () => {
    const limits = { ...D, maxTextTokens: 1000 };
    const err = violation({ a: 'hello' + ' hello'.repeat(9999) }, limits);
    expect(err.error).toBe('prompt_too_large_tokens');
    expect(err.extra).toEqual({ field: 'inputs.a', actual: 1001, limit: 1000 });
  });
  it('does not tokenize handles, data URIs or _trigger', () => {
    const limits = { ...D, maxTextTokens: 5, maxTextBytes: 5 };
    expect(() => checkInputLimits({
      f: 'storage://3f2b8c1e-9a4d-4e5f-8b6a-1c2d3e4f5a6b', d: dataUri(100), _trigger: 'many many many words here',
    }, limits)).not.toThrow();
  });
  it('default boundary: 200,000 tokens pass, 200,001 fail', () => {
    const dog = (n: number) => 'dog' + ' dog'.repeat(n - 1); // 4 bytes per token
    expect(countTokens(dog(1000))).toBe(1000);
    const limits = { ...D, maxFieldBytes: 4_000_000, maxTextBytes: 4_000_000 };
    expect(() => checkInputLimits({ a: dog(200_000) }, limits)).not.toThrow();
    expectViolation({ a: dog(100_000), b: dog(100_001) }, limits,
      { error: 'prompt_too_large_tokens', field: 'inputs.b', actual: 200_001, limit: 200_000 });
  });
});

describe('_trigger and custom limits', () => {
  it('_trigger is exempt from every dimension', () => {
    expect(() => checkInputLimits({
      _trigger: { source: 'api', big: 'x'.repeat(2_000_000), deep: nestArrays(100), data: dataUri(2_000_000), many: new Array(200_000).fill(0) },
    }, D)).not.toThrow();
  });
  it('a lower custom limits object applies', () => {
    const tiny: InputLimits = { maxBodyBytes: 100, maxFieldBytes: 50, maxInlineBase64Bytes: 3, maxTextBytes: 30, maxTextTokens: 5, maxDepth: 2, maxNodes: 4 };
    expectViolation({ a: [[1]] }, tiny, { error: 'input_structure_too_deep', field: 'inputs.a', actual: 3, limit: 2 });
    expectViolation({ a: [1, 2, 3, 4] }, tiny, { error: 'input_structure_too_large', field: 'inputs.a', actual: 5, limit: 4 });
    expectViolation({ a: 'x'.repeat(49) }, tiny, { error: 'input_field_too_large', field: 'inputs.a', actual: 51, limit: 50 });
    expectViolation({ a: dataUri(4) }, tiny, { error: 'inline_base64_too_large', field: 'inputs.a', actual: 4, limit: 3 });
    expectViolation({ a: 'x'.repeat(20), b: 'y'.repeat(11) }, tiny, { error: 'prompt_too_large_bytes', field: 'inputs.b', actual: 31, limit: 30 });
    expectViolation({ a: 'one two three four five six' }, tiny, { error: 'prompt_too_large_tokens', field: 'inputs.a', actual: 6, limit: 5 });
    expect(() => checkInputLimits({ a: 'one two three four five' }, tiny)).not.toThrow();
  });
});

describe('order of checks', () => {
  const tiny: InputLimits = { maxBodyBytes: 1000, maxFieldBytes: 40, maxInlineBase64Bytes: 3, maxTextBytes: 30, maxTextTokens: 5, maxDepth: 2, maxNodes: 6 };
  it('depth, then nodes, then field bytes, then inline base64, then text bytes, then tokens', () => {
    // everything violated: depth wins, even when its field comes after the others
    const all = { big: 'x'.repeat(100), inline: dataUri(10), many: [1, 2, 3, 4, 5, 6], deep: [[1]] };
    expect(violation(all, tiny).error).toBe('input_structure_too_deep');
    const { deep: _deep, ...noDepth } = all;
    expect(violation(noDepth, tiny).error).toBe('input_structure_too_large');
    const { many: _many, ...noNodes } = noDepth;
    expect(violation(noNodes, tiny).error).toBe('input_field_too_large');
    expect(violation({ inline: dataUri(10), text: 'x'.repeat(35) }, tiny).error).toBe('inline_base64_too_large');
    expect(violation({ text: 'x'.repeat(35) }, tiny).error).toBe('prompt_too_large_bytes');
    expect(violation({ text: 'a b c d e f g' }, tiny).error).toBe('prompt_too_large_tokens');
  });
});

describe('checkBodySize (request_body_too_large)', () => {
  it('exactly the limit passes; one over is a 413 with actual and limit', () => {
    expect(() => checkBodySize(4_194_304, D)).not.toThrow();
    expect(() => checkBodySize(0, D)).not.toThrow();
    expect(() => checkBodySize(Number.NaN, D)).not.toThrow();
    try {
      checkBodySize(4_194_305, D);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(AppError);
      const e = err as AppError;
      expect([e.status, e.error, e.extra]).toEqual([413, 'request_body_too_large', { actual: 4_194_305, limit: 4_194_304 }]);
    }
    expect(() => checkBodySize(101, { maxBodyBytes: 100 })).toThrow(AppError);
  });
});
