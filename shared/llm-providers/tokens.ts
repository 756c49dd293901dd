import { createRequire } from 'node:module';

// How the service counts tokens: o200k_base (gpt-tokenizer), special tokens read as plain text,
// long words sliced. The input limits (limits.ts) count prompts with it, and an `llm` block whose
// provider reported no usage is priced with it.

type Encoding = typeof import('gpt-tokenizer/encoding/o200k_base');
let encoding: Encoding | undefined;
/**
 * The encoding's tables are loaded on the first count, not at import: they hold ~57 MB that a
 * process which never counts (the worker whose providers report usage, the API whose inputs are
 * under the token limit in bytes) would carry for nothing (issue 44). `require` keeps the count
 * synchronous; the package ships the same code as CommonJS.
 */
const encodeGenerator: Encoding['encodeGenerator'] = (text, options) =>
  (encoding ??= createRequire(import.meta.url)('gpt-tokenizer/encoding/o200k_base') as Encoding).encodeGenerator(text, options);

/** Read `<|endoftext|>` and friends as ordinary text instead of throwing. */
const TOKENIZE_OPTIONS = { disallowedSpecial: new Set<string>() };

/**
 * Tokens of `text`. With `stopAbove`, counting stops as soon as the count goes over it and that
 * count (a lower bound of the whole) is returned: a limit check need not tokenize a huge text.
 * Byte-level BPE gives every token at least one byte, so the count never exceeds the UTF-8 bytes.
 */
export function countTokens(text: string, options: { stopAbove?: number } = {}): number {
  const stopAbove = options.stopAbove ?? Infinity;
  let tokens = 0;
  for (const chunk of encodePieces(text)) {
    tokens += chunk.length;
    if (tokens > stopAbove) break;
  }
  return tokens;
}

/** Longest run of non-space characters encoded as one piece (see encodePieces). */
const MAX_WORD_CHARS = 256;
const LONG_WORD = new RegExp(`\\S{${MAX_WORD_CHARS + 1},}`, 'g');

/**
 * Token chunks of `text`, with every run of more than 256 non-space characters encoded in
 * 256-character slices. BPE merges within one pre-token cost time quadratic in its length, so a
 * 1 MB word (one letter repeated) would block the event loop for minutes; sliced, it counts in
 * milliseconds and over-counts by at most one token per slice. Ordinary text is encoded unchanged.
 */
function* encodePieces(text: string): Generator<number[]> {
  let from = 0;
  for (const match of text.matchAll(LONG_WORD)) {
    if (match.index > from) yield* encodeGenerator(text.slice(from, match.index), TOKENIZE_OPTIONS);
    for (let i = 0; i < match[0].length; i += MAX_WORD_CHARS) {
      yield* encodeGenerator(match[0].slice(i, i + MAX_WORD_CHARS), TOKENIZE_OPTIONS);
    }
    from = match.index + match[0].length;
  }
  if (from < text.length) yield* encodeGenerator(text.slice(from), TOKENIZE_OPTIONS);
}
