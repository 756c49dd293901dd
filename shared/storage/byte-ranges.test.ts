import { describe, expect, it } from 'vitest';
import { contentRange, ifNoneMatchHits, ifRangeAllows, parseRange, requestedRange, unsatisfiedRange } from './byte-ranges.js';

const ETAG = `"${'a'.repeat(64)}"`;

describe('parseRange: one byte range, strictly (RFC 9110 §14.1.2)', () => {
  it('no header is the whole file', () => {
    expect(parseRange(undefined, 1000)).toEqual({ kind: 'full' });
  });

  it.each([
    ['bytes=0-0', 0, 0],
    ['bytes=100-199', 100, 199],
    ['bytes=0-999', 0, 999],
    ['bytes=990-5000', 990, 999], // the end is clamped
    ['bytes=500-', 500, 999],
    ['bytes=999-', 999, 999],
    ['bytes=-1', 999, 999],
    ['bytes=-100', 900, 999],
    ['bytes=-5000', 0, 999], // a suffix longer than the file is the whole file
    ['BYTES=1-2', 1, 2], // the unit is case-insensitive
    ['bytes = 1-2 ', 1, 2],
    ['bytes=0-99999999999999999999', 0, 999],
  ])('%s → %i-%i', (header, start, end) => {
    expect(parseRange(header, 1000)).toEqual({ kind: 'partial', start, end });
  });

  it.each([
    'bytes=5-1', // a > b
    'bytes=0-1,5-6', // several ranges
    'bytes=0-1,', // a list, even with one element
    'bytes=1000-', // start at the end
    'bytes=999999999-',
    'bytes=1000-1001',
    'bytes=-0',
    'items=0-1', // another unit
    'bytes=',
    'bytes=-',
    'bytes=a-b',
    'bytes=1.5-2',
    'bytes=+1-2',
    'bytes=0x1-2',
    'bytes 0-1',
    '',
    '0-1',
  ])('%j is unsatisfiable (416)', (header) => {
    expect(parseRange(header, 1000)).toEqual({ kind: 'unsatisfiable' });
  });

  it('nothing of an empty file can be asked for', () => {
    expect(parseRange('bytes=0-', 0)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange('bytes=-1', 0)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange(undefined, 0)).toEqual({ kind: 'full' });
  });
});

describe('If-Range and If-None-Match', () => {
  it('If-Range keeps the range only for our strong ETag', () => {
    expect(ifRangeAllows(undefined, ETAG)).toBe(true);
    expect(ifRangeAllows(ETAG, ETAG)).toBe(true);
    expect(ifRangeAllows(`W/${ETAG}`, ETAG)).toBe(false);
    expect(ifRangeAllows(`"${'b'.repeat(64)}"`, ETAG)).toBe(false);
    expect(ifRangeAllows('Wed, 21 Oct 2015 07:28:00 GMT', ETAG)).toBe(false);

    expect(requestedRange({ range: 'bytes=1-2', 'if-range': ETAG }, 10, ETAG)).toEqual({ kind: 'partial', start: 1, end: 2 });
    expect(requestedRange({ range: 'bytes=1-2', 'if-range': '"other"' }, 10, ETAG)).toEqual({ kind: 'full' });
    // A stale validator means "send it all", even when the range itself would be refused.
    expect(requestedRange({ range: 'bytes=5-1', 'if-range': '"other"' }, 10, ETAG)).toEqual({ kind: 'full' });
    expect(requestedRange({ range: 'bytes=5-1' }, 10, ETAG)).toEqual({ kind: 'unsatisfiable' });
    expect(requestedRange({ 'if-range': ETAG }, 10, ETAG)).toEqual({ kind: 'full' });
  });

  it('If-None-Match compares weakly and accepts lists and *', () => {
    expect(ifNoneMatchHits(undefined, ETAG)).toBe(false);
    expect(ifNoneMatchHits(ETAG, ETAG)).toBe(true);
    expect(ifNoneMatchHits(`W/${ETAG}`, ETAG)).toBe(true);
    expect(ifNoneMatchHits(`"x", ${ETAG}`, ETAG)).toBe(true);
    expect(ifNoneMatchHits('*', ETAG)).toBe(true);
    expect(ifNoneMatchHits('"x"', ETAG)).toBe(false);
  });

  it('Content-Range values', () => {
    expect(contentRange(100, 199, 1000)).toBe('bytes 100-199/1000');
    expect(unsatisfiedRange(1000)).toBe('bytes */1000');
  });
  it('ifNoneMatchHits (also the client config\'s): weak comparison over a list; W/ ignored; * matches; unquoted or other tags do not', () => {
    const etag = '"abc"';
    expect(ifNoneMatchHits('"abc"', etag)).toBe(true);
    expect(ifNoneMatchHits('W/"abc"', etag)).toBe(true);
    expect(ifNoneMatchHits('"x", W/"y" ,"abc"', etag)).toBe(true);
    expect(ifNoneMatchHits('*', etag)).toBe(true);
    expect(ifNoneMatchHits('"*"', etag)).toBe(false);
    expect(ifNoneMatchHits('abc', etag)).toBe(false);
    expect(ifNoneMatchHits('"abcd", "ab"', etag)).toBe(false);
    expect(ifNoneMatchHits(undefined, etag)).toBe(false);
    expect(ifNoneMatchHits('', etag)).toBe(false);
  });
});
