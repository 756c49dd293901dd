// HTTP byte ranges (RFC 9110 §14) for files served whole or in one piece: board downloads, and any
// other route that streams a stored object of known size and strong ETag.

/** What a request's `Range` asks of a representation of `size` bytes. */
export type RangeRequest =
  | { kind: 'full' }
  /** Inclusive offsets, as in `Content-Range`. */
  | { kind: 'partial'; start: number; end: number }
  /** Answer 416, with the `Content-Range` of `unsatisfiedRange`. */
  | { kind: 'unsatisfiable' };

const FULL: RangeRequest = { kind: 'full' };
const UNSATISFIABLE: RangeRequest = { kind: 'unsatisfiable' };

// One byte-range-spec (`a-b`, `a-`) or suffix-range (`-n`) after the unit; the unit is compared
// case-insensitively (§14.1), optional whitespace around the spec as the list syntax allows.
const SINGLE_RANGE = /^bytes[ \t]*=[ \t]*(?:(\d+)-(\d*)|-(\d+))[ \t]*$/i;

/**
 * A strict single-range reading of `Range`. No header: the full representation. Anything else
 * must be exactly one satisfiable byte range, or it is `unsatisfiable`: several ranges (we never
 * send multipart/byteranges), other units, malformed text, `a > b`, a start at or past the end,
 * `-0`, or any range of an empty file. The end is clamped to `size - 1`.
 */
export function parseRange(header: string | undefined, size: number): RangeRequest {
  if (header === undefined) return FULL;
  const match = SINGLE_RANGE.exec(header);
  if (!match) return UNSATISFIABLE;
  const [, first, last, suffix] = match;
  if (suffix !== undefined) {
    const length = Number(suffix);
    if (length === 0 || size === 0) return UNSATISFIABLE;
    return { kind: 'partial', start: Math.max(0, size - length), end: size - 1 };
  }
  const start = Number(first);
  if (start >= size) return UNSATISFIABLE;
  if (last === '') return { kind: 'partial', start, end: size - 1 };
  const end = Number(last);
  if (end < start) return UNSATISFIABLE;
  return { kind: 'partial', start, end: Math.min(end, size - 1) };
}

/**
 * Whether a `Range` may be honoured given `If-Range` (RFC 9110 §13.1.5): with no `If-Range`, yes;
 * otherwise only when it is exactly our strong `etag` (strong comparison: a weak tag or a date, which
 * we cannot validate without `Last-Modified`, means "send the whole file").
 */
export function ifRangeAllows(ifRange: string | undefined, etag: string): boolean {
  return ifRange === undefined || ifRange.trim() === etag;
}

/**
 * `If-None-Match` (RFC 9110 §13.1.2) against our `etag`, weak comparison: `*` or any listed tag
 * with the same opaque value, `W/` or not. True means 304 for GET and HEAD.
 */
export function ifNoneMatchHits(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  const opaque = etag.startsWith('W/') ? etag.slice(2) : etag;
  return ifNoneMatch.split(',').some((candidate) => {
    const tag = candidate.trim();
    return tag === '*' || tag === opaque || tag === `W/${opaque}`;
  });
}

/**
 * The range to send for a request's `Range` and `If-Range` headers: `parseRange`, unless `If-Range`
 * names another version, in which case the whole representation.
 */
export function requestedRange(headers: { range?: string; 'if-range'?: string | string[] }, size: number, etag: string): RangeRequest {
  if (headers.range === undefined) return FULL;
  const ifRange = headers['if-range'];
  if (Array.isArray(ifRange) || !ifRangeAllows(ifRange, etag)) return FULL;
  return parseRange(headers.range, size);
}

/** `Content-Range` of a 206. */
export const contentRange = (start: number, end: number, size: number): string => `bytes ${start}-${end}/${size}`;

/** `Content-Range` of a 416. */
export const unsatisfiedRange = (size: number): string => `bytes */${size}`;
