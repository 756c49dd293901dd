import { describe, expect, it } from 'vitest';
import { buildGlobalCtx, truncateLargeStrings, utf8Length, utf8Prefix } from './trace.js';

describe('globalCtx', () => {
  it('replaces strings over 64 KiB, at any depth, with a 1 KiB preview', () => {
    const big = 'a'.repeat(64 * 1024 + 1);
    expect(truncateLargeStrings({ list: [big, 'small'], exact: 'b'.repeat(64 * 1024) })).toEqual({
      list: [{ __truncated: true, originalBytes: 64 * 1024 + 1, preview: 'a'.repeat(1024) }, 'small'],
      exact: 'b'.repeat(64 * 1024),
    });
  });

  it('counts UTF-8 bytes and never splits a character', () => {
    expect(utf8Length('é€😀')).toBe(2 + 3 + 4);
    expect(utf8Prefix('€€€', 7)).toBe('€€');
    const euros = '€'.repeat(22_000); // 66,000 bytes in 22,000 characters
    expect(truncateLargeStrings(euros)).toMatchObject({ __truncated: true, originalBytes: 66_000, preview: '€'.repeat(341) });
  });

  it('holds every output by id plus _trigger', () => {
    expect(buildGlobalCtx(new Map<string, unknown>([['q', 'Ada'], ['x', { n: 1 }]]), { source: 'api' }))
      .toEqual({ q: 'Ada', x: { n: 1 }, _trigger: { source: 'api' } });
  });
});
