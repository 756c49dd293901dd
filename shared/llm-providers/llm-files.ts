// Files an `llm` block passes to the model natively (config `files`, docs/app-runs.md "llm block"):
// what a file is by its magic bytes, and whether a model reads PDFs (site setting
// `llm_block.pdf_support`). Pure: no I/O (activities/app-runs/llm-files.ts reads the files).

/** The kinds of file an `llm` block can pass natively. */
export type LlmFileMime = 'application/pdf' | 'image/png' | 'image/jpeg' | 'image/webp' | 'image/gif';

/** At most this many files per `llm` block (publish refuses more). */
export const MAX_LLM_FILES = 10;

/** The input value types an `llm` block's `files` may name. */
export const LLM_FILE_INPUT_TYPES: readonly string[] = ['pdf', 'file', 'string'];

const startsWith = (bytes: Uint8Array, signature: readonly number[], offset = 0) =>
  bytes.length >= offset + signature.length && signature.every((byte, i) => bytes[offset + i] === byte);
const ascii = (text: string) => Array.from(text, (c) => c.charCodeAt(0));

const PDF = ascii('%PDF-');
const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const JPEG = [0xff, 0xd8, 0xff];
const RIFF = ascii('RIFF');
const WEBP = ascii('WEBP');
const GIF87 = ascii('GIF87a');
const GIF89 = ascii('GIF89a');

/** The file's type from its first bytes (`%PDF-`, the PNG signature, FF D8 FF, RIFF….WEBP, GIF87a/GIF89a), or null. */
export function sniffMime(bytes: Uint8Array): LlmFileMime | null {
  if (startsWith(bytes, PDF)) return 'application/pdf';
  if (startsWith(bytes, PNG)) return 'image/png';
  if (startsWith(bytes, JPEG)) return 'image/jpeg';
  if (startsWith(bytes, RIFF) && startsWith(bytes, WEBP, 8)) return 'image/webp';
  if (startsWith(bytes, GIF87) || startsWith(bytes, GIF89)) return 'image/gif';
  return null;
}

/** A rule of `llm_block.pdf_support`: `model` and `provider` are globs (`*` is any run of characters), case-insensitive. */
export interface PdfSupportRule {
  /** The host name of the provider's base URL (`api.openai.com`, `*.openai.azure.com`); any provider when absent. */
  provider?: string;
  model: string;
  pdf: boolean;
}

/** Whether `text` matches `pattern`, where `*` stands for any run of characters; case-insensitive, whole text. */
export function globMatches(pattern: string, text: string): boolean {
  const parts = pattern.toLowerCase().split('*');
  const subject = text.toLowerCase();
  if (parts.length === 1) return subject === parts[0];
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (!subject.startsWith(first) || subject.length < first.length + last.length || !subject.endsWith(last)) return false;
  let at = first.length;
  const end = subject.length - last.length;
  for (const middle of parts.slice(1, -1)) {
    const found = subject.indexOf(middle, at);
    if (found < 0 || found + middle.length > end) return false;
    at = found + middle.length;
  }
  return true;
}

/** The first rule matching the provider's host and the model decides; a model no rule matches does not read PDFs. */
export function modelReadsPdf(rules: readonly PdfSupportRule[], target: { providerHost: string; model: string }): boolean {
  const rule = rules.find((r) => (r.provider === undefined || globMatches(r.provider, target.providerHost)) && globMatches(r.model, target.model));
  return rule?.pdf ?? false;
}

/** What a model without PDF support reads in place of a PDF. */
export const pdfOmittedHint = (filename: string) => `[PDF "${filename}" omitted: this model cannot read PDF files]`;
