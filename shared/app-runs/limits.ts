/**
 * Run input and output limits (spec §8.1, error shapes §7.1/§7.2). Pure: no I/O, no settings
 * reads. Callers resolve `run.input_limit` / `run.response_limit` (site-settings/schemas.ts) and
 * pass the effective limits in.
 *
 * How the input dimensions are measured (every top-level key except `_trigger`, which the server
 * sets; a top-level `undefined` is treated as absent):
 *
 * - Depth: the length of a value's path from `inputs`. `inputs.a` is depth 1, `inputs.a.b` and
 *   `inputs.a[0]` are depth 2, and so on; scalars and empty containers count like any value. A
 *   field's depth is its deepest value's depth. With the default 32, `inputs.a` plus 31 nested
 *   indices passes and one level more fails. `actual` is the field's exact depth.
 * - Nodes: every value counts once (the top-level value, every array element, every object
 *   property's value); keys are not separate nodes. Counted over all inputs; `actual` is the total.
 * - Field bytes: UTF-8 bytes of `JSON.stringify(value)`, where file handles and detected inline
 *   data URIs count as if they were empty strings (handles per §8.1; data URIs are governed by the
 *   inline limit instead; otherwise a payload under `maxInlineBase64Bytes` could never pass the
 *   field limit and `inline_base64_too_large` would be unreachable with the defaults).
 * - Inline base64: strings `data:<mediatype>[;params];base64,<payload>` whose payload is base64
 *   (standard or URL-safe alphabet, optional `=` padding, no whitespace), anywhere in the value.
 *   Measured per data URI as the DECODED payload size (the file's size), computed from the length
 *   without decoding. A `data:` string that does not match this shape is ordinary text.
 * - Text bytes: UTF-8 bytes of every string value (not keys) that is neither a file handle nor an
 *   inline data URI, summed over all inputs. Bare base64 counts here (and in the field size).
 * - Tokens: the same strings, each counted separately by `countTokens` (tokens.ts). Bare base64
 *   that starts with a known file magic (PDF, PNG, JPEG, GIF, WebP: it is converted or passed as a
 *   file, never read as text, §4.1) is not tokenized.
 *   Byte-level BPE gives every token at least one byte, so tokens ≤ UTF-8 bytes: when the text
 *   bytes are at most `maxTextTokens` tokenization is skipped. (Tokens ≤ characters is NOT true:
 *   'ꙮ' is one UTF-16 unit and three tokens.) Counting stops once the limit is crossed, so
 *   `actual` for `prompt_too_large_tokens` is a lower bound (the count when the limit was crossed).
 *
 * For the aggregate dimensions (nodes, text bytes, tokens) `field` names the top-level key, in
 * key order, at which the running total first went over the limit.
 * File handles are what `isFileHandle` (shared/storage/handles.ts) accepts: `wf-file:<uuid>` or
 * `storage://<uuid>`, so always under 256 characters; anything else (longer, malformed) is text.
 */
import { AppError } from '../errors.js';
import { isFileHandle } from '../storage/handles.js';
import { countTokens } from '../llm-providers/tokens.js';

/** The resolved `run.input_limit` setting. */
export interface InputLimits {
  maxBodyBytes: number;
  maxFieldBytes: number;
  maxInlineBase64Bytes: number;
  maxTextBytes: number;
  maxTextTokens: number;
  maxDepth: number;
  maxNodes: number;
}

export type InputLimitErrorCode =
  | 'input_structure_too_deep'
  | 'input_structure_too_large'
  | 'input_field_too_large'
  | 'inline_base64_too_large'
  | 'prompt_too_large_bytes'
  | 'prompt_too_large_tokens';

/** The key the server owns (§4.1); never measured. */
export const TRIGGER_INPUT_KEY = '_trigger';

/** Header is ASCII without quotes/backslashes; the payload alphabet needs no JSON escaping. */
const DATA_URI = /^data:[\x21\x23-\x2b\x2d-\x5b\x5d-\x7e]*;base64,([A-Za-z0-9+/_-]*)(={0,2})$/i;
const BASE64_TEXT = /^[A-Za-z0-9+/]+={0,2}$/;
/** Base64 of file magic numbers: %PDF-, PNG, JPEG, GIF8, RIFF (WebP). */
const BINARY_MAGIC_PREFIXES = ['JVBERi0', 'iVBORw0KGgo', '/9j/', 'R0lGOD', 'UklGR'];

/** Decoded byte size of an inline `data:…;base64,…` string, or null if it is not one. */
export function inlineBase64DecodedBytes(s: string): number | null {
  if (s.length < 13 || (s.charCodeAt(0) | 0x20) !== 0x64 /* d */ || s.slice(0, 5).toLowerCase() !== 'data:') return null;
  const m = DATA_URI.exec(s);
  if (!m) return null;
  return Math.floor((m[1]!.length * 3) / 4);
}

const isBareBinaryBase64 = (s: string): boolean =>
  s.length >= 8 && BINARY_MAGIC_PREFIXES.some((p) => s.startsWith(p)) && BASE64_TEXT.test(s);

interface TextString { value: string; tokenize: boolean }

interface FieldStats {
  key: string;
  depth: number;
  nodes: number;
  /** Sum of the lengths of exempt strings (handles, data URIs): all ASCII without escapes. */
  exemptChars: number;
  /** Decoded size of the first data URI found over the inline limit. */
  inlineOver: number | null;
  textBytes: number;
  texts: TextString[];
}

function measureField(key: string, root: unknown, maxInline: number): FieldStats {
  const stats: FieldStats = { key, depth: 1, nodes: 0, exemptChars: 0, inlineOver: null, textBytes: 0, texts: [] };
  const visitString = (value: string) => {
    if (isFileHandle(value)) {
      stats.exemptChars += value.length;
      return;
    }
    const inline = inlineBase64DecodedBytes(value);
    if (inline !== null) {
      stats.exemptChars += value.length;
      if (inline > maxInline && stats.inlineOver === null) stats.inlineOver = inline;
      return;
    }
    stats.textBytes += Buffer.byteLength(value, 'utf8');
    stats.texts.push({ value, tokenize: !isBareBinaryBase64(value) });
  };
  // Iterative DFS (deep inputs must not overflow the call stack). Scalars are handled where they
  // are found; only containers go on the stack, each with the depth of its children. Every
  // visited value counts one node; the order of strings within a field does not matter.
  stats.nodes = 1;
  if (typeof root === 'string') {
    visitString(root);
    return stats;
  }
  const containers: object[] = [];
  const childDepths: number[] = [];
  if (typeof root === 'object' && root !== null) {
    containers.push(root);
    childDepths.push(2);
  }
  while (containers.length > 0) {
    const container = containers.pop()!;
    const depth = childDepths.pop()!;
    const children: unknown[] = Array.isArray(container) ? container : Object.values(container);
    const n = children.length;
    if (n === 0) continue;
    stats.nodes += n;
    if (depth > stats.depth) stats.depth = depth;
    for (let i = 0; i < n; i++) {
      const child = children[i];
      if (typeof child === 'string') {
        visitString(child);
      } else if (typeof child === 'object' && child !== null) {
        containers.push(child);
        childDepths.push(depth + 1);
      }
    }
  }
  return stats;
}

function fieldJsonBytes(value: unknown, exemptChars: number): number {
  const json = JSON.stringify(value);
  return json === undefined ? 0 : Buffer.byteLength(json, 'utf8') - exemptChars;
}

function limitError(code: InputLimitErrorCode, message: string, key: string, actual: number, limit: number): AppError {
  return new AppError(400, code, message, { field: `inputs.${key}`, actual, limit });
}

/** The top-level key at which a running total (per-field amounts, in order) first exceeds `limit`. */
function crossingKey(fields: FieldStats[], amount: (f: FieldStats) => number, limit: number): string {
  let running = 0;
  for (const f of fields) {
    running += amount(f);
    if (running > limit) return f.key;
  }
  return fields[fields.length - 1]!.key;
}

/**
 * Throws `AppError(400, code, message, { field, actual, limit })` for the first violated
 * dimension, in this order: depth, node count, field bytes, inline base64, text bytes, tokens.
 */
export function checkInputLimits(inputs: Record<string, unknown>, limits: InputLimits): void {
  const fields: FieldStats[] = [];
  for (const key of Object.keys(inputs)) {
    if (key === TRIGGER_INPUT_KEY || inputs[key] === undefined) continue;
    fields.push(measureField(key, inputs[key], limits.maxInlineBase64Bytes));
  }
  if (fields.length === 0) return;

  for (const f of fields) {
    if (f.depth > limits.maxDepth) {
      throw limitError('input_structure_too_deep',
        `Input nesting depth ${f.depth} exceeds the limit of ${limits.maxDepth}`, f.key, f.depth, limits.maxDepth);
    }
  }

  const totalNodes = fields.reduce((n, f) => n + f.nodes, 0);
  if (totalNodes > limits.maxNodes) {
    throw limitError('input_structure_too_large',
      `Inputs have ${totalNodes} values; the limit is ${limits.maxNodes}`,
      crossingKey(fields, (f) => f.nodes, limits.maxNodes), totalNodes, limits.maxNodes);
  }

  for (const f of fields) {
    const bytes = fieldJsonBytes(inputs[f.key], f.exemptChars);
    if (bytes > limits.maxFieldBytes) {
      throw limitError('input_field_too_large',
        `Input field is ${bytes} bytes; the limit is ${limits.maxFieldBytes} bytes`, f.key, bytes, limits.maxFieldBytes);
    }
  }

  for (const f of fields) {
    if (f.inlineOver !== null) {
      throw limitError('inline_base64_too_large',
        `Inline base64 payload is ${f.inlineOver} bytes decoded; the limit is ${limits.maxInlineBase64Bytes} bytes`,
        f.key, f.inlineOver, limits.maxInlineBase64Bytes);
    }
  }

  const totalTextBytes = fields.reduce((n, f) => n + f.textBytes, 0);
  if (totalTextBytes > limits.maxTextBytes) {
    throw limitError('prompt_too_large_bytes',
      `Text inputs total ${totalTextBytes} bytes; the limit is ${limits.maxTextBytes} bytes`,
      crossingKey(fields, (f) => f.textBytes, limits.maxTextBytes), totalTextBytes, limits.maxTextBytes);
  }

  // tokens ≤ UTF-8 bytes (each byte-level BPE token covers at least one byte).
  if (totalTextBytes <= limits.maxTextTokens) return;
  let tokens = 0;
  for (const f of fields) {
    for (const text of f.texts) {
      if (!text.tokenize) continue;
      tokens += countTokens(text.value, { stopAbove: limits.maxTextTokens - tokens });
      if (tokens > limits.maxTextTokens) {
        throw limitError('prompt_too_large_tokens',
          `Text inputs exceed ${limits.maxTextTokens} tokens (counted at least ${tokens} before stopping)`,
          f.key, tokens, limits.maxTextTokens);
      }
    }
  }
}

/** §8.1 total request body: 413 `request_body_too_large`. A non-finite length is not checked. */
export function checkBodySize(contentLength: number, limits: Pick<InputLimits, 'maxBodyBytes'>): void {
  if (Number.isFinite(contentLength) && contentLength > limits.maxBodyBytes) {
    throw new AppError(413, 'request_body_too_large',
      `Request body is ${contentLength} bytes; the limit is ${limits.maxBodyBytes} bytes`,
      { actual: contentLength, limit: limits.maxBodyBytes });
  }
}
