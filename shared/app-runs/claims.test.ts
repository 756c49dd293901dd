import { describe, expect, it } from 'vitest';
import { CLAIM_THRESHOLD_BYTES, exceedsClaimThreshold, isClaim, jsonBytes } from './claims.js';

describe('claims', () => {
  it('isClaim accepts exactly { $claim, bytes }', () => {
    expect(isClaim({ $claim: 'output:x', bytes: 70_000 })).toBe(true);
    expect(isClaim({ $claim: 'output:x' })).toBe(false);
    expect(isClaim({ $claim: 1, bytes: 2 })).toBe(false);
    expect(isClaim({ $claim: 'k', bytes: 2, other: true })).toBe(false);
    expect(isClaim([{ $claim: 'k', bytes: 2 }])).toBe(false);
    expect(isClaim(null)).toBe(false);
    expect(isClaim('$claim')).toBe(false);
  });

  it('measures JSON as UTF-8 bytes', () => {
    expect(jsonBytes('é')).toBe(4); // "é" → quote, 2 bytes, quote
    expect(jsonBytes('😀')).toBe(6);
    expect(jsonBytes(undefined)).toBe(4);
    expect(jsonBytes({ a: 1 })).toBe(7);
  });

  it('the threshold is 64 KiB of JSON, counted in UTF-8', () => {
    const fits = 'a'.repeat(CLAIM_THRESHOLD_BYTES - 2); // plus two quotes: exactly the threshold
    expect(exceedsClaimThreshold(fits)).toBe(false);
    expect(exceedsClaimThreshold(`${fits}a`)).toBe(true);
    // 30,000 characters of 3 bytes each: under the threshold in characters, over it in bytes.
    expect(exceedsClaimThreshold('€'.repeat(30_000))).toBe(true);
    expect(exceedsClaimThreshold('€'.repeat(20_000))).toBe(false);
    expect(exceedsClaimThreshold({ small: [1, 2, 3] })).toBe(false);
  });
});
