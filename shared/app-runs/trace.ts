// The `globalCtx` of a traced run (trace=full): every output by block id plus `_trigger`, with
// oversized strings replaced so one huge value cannot blow up the response (spec §4.1).

export const TRACE_STRING_LIMIT_BYTES = 64 * 1024;
export const TRACE_PREVIEW_BYTES = 1024;

export interface TruncatedString { __truncated: true; originalBytes: number; preview: string }

/** UTF-8 length without TextEncoder (not every sandbox has it). */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    bytes += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
  }
  return bytes;
}

/** The longest prefix of whole characters that fits in `maxBytes` of UTF-8. */
export function utf8Prefix(text: string, maxBytes: number): string {
  let bytes = 0;
  let end = 0;
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    const size = code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
    if (bytes + size > maxBytes) break;
    bytes += size;
    end += ch.length;
  }
  return text.slice(0, end);
}

export function truncateLargeStrings(value: unknown): unknown {
  if (typeof value === 'string') {
    // A string of at most limit/4 characters cannot exceed the limit: skip counting it.
    if (value.length * 4 <= TRACE_STRING_LIMIT_BYTES) return value;
    const originalBytes = utf8Length(value);
    if (originalBytes <= TRACE_STRING_LIMIT_BYTES) return value;
    return { __truncated: true, originalBytes, preview: utf8Prefix(value, TRACE_PREVIEW_BYTES) } satisfies TruncatedString;
  }
  if (Array.isArray(value)) return value.map(truncateLargeStrings);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, truncateLargeStrings(v)]));
  }
  return value;
}

export function buildGlobalCtx(outputs: ReadonlyMap<string, unknown>, trigger: unknown): Record<string, unknown> {
  const ctx: Record<string, unknown> = {};
  for (const [id, output] of outputs) ctx[id] = truncateLargeStrings(output);
  ctx._trigger = truncateLargeStrings(trigger);
  return ctx;
}
