import { describe, expect, it } from 'vitest';
import { countTokens } from './tokens.js';

describe('countTokens', () => {
  it('tokens ≤ UTF-8 bytes holds (the input limits skip tokenizing on it); tokens ≤ characters does not', () => {
    const samples = ['hello world', 'ꙮꙮꙮ', 'ඞ', '𠀀𠀁', '😀🧿🧑‍🚀', '日本語のテキスト', 'Ünïcödé', '\u{10FFFF}', '\u0000\u0001\t',
      '<|endoftext|>', Buffer.from(Array.from({ length: 2000 }, (_, i) => (i * 7919) % 256)).toString('latin1')];
    for (const s of samples) expect(countTokens(s)).toBeLessThanOrEqual(Buffer.byteLength(s));
    expect(countTokens('ꙮꙮꙮ')).toBeGreaterThan('ꙮꙮꙮ'.length);
  });

  it('counts o200k_base tokens of ordinary text', () => {
    expect(countTokens('')).toBe(0);
    expect(countTokens('hello' + ' hello'.repeat(599))).toBe(600);
    expect(countTokens('dog' + ' dog'.repeat(999))).toBe(1000);
  });

  it('reads special-token text as plain text instead of throwing', () => {
    expect(countTokens('<|endoftext|>'.repeat(5))).toBeGreaterThan(5);
  });

  it('counts a 1 MB word (one letter repeated) in well under a second, not minutes', () => {
    const started = performance.now();
    expect(countTokens('y'.repeat(1_000_000))).toBeGreaterThan(1_000_000 / 256);
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('with stopAbove, stops once the count goes over it and returns that count', () => {
    const text = 'hello' + ' hello'.repeat(9999); // 10,000 tokens
    expect(countTokens(text, { stopAbove: 1000 })).toBe(1001);
    expect(countTokens(text, { stopAbove: 10_000 })).toBe(10_000);
    expect(countTokens(text, { stopAbove: 0 })).toBeGreaterThan(0);
  });
});
