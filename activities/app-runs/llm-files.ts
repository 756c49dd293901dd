import { sql } from 'kysely';
import { ApplicationFailure } from '@temporalio/common';
import type { LlmFileInput } from '../../shared/app-runs/contracts.js';
import type { ChatContentPart } from '../../shared/llm-providers/llm-client.js';
import { pdfOmittedHint, sniffMime } from '../../shared/llm-providers/llm-files.js';
import type { Database } from '../../shared/db/client.js';
import { parseFileHandle, type FileStore } from '../../shared/storage/index.js';
import { decodeBase64, readRunFile } from './run-files.js';

// The `llm` block's native files (config `files`, docs/app-runs.md "llm block"): each named input's
// raw value, read from the run's inputs (never through workflow history), becomes a content part of
// the user message.

/** A file larger than this fails the block (the PDF inputs' cap). */
export const LLM_FILE_MAX_BYTES = 20 * 1024 * 1024;

const DATA_URI = /^data:[^,;]*(?:;[^,;]*)*;base64,/i;

const refuse = (message: string) => ApplicationFailure.nonRetryable(message, 'LlmFileRejected');

/** `{ _type: 'pdf', value }` (and the same wrapper of any `_type`) → its value. */
const unwrap = (value: unknown): unknown =>
  value !== null && typeof value === 'object' && typeof (value as { _type?: unknown })._type === 'string' && 'value' in value
    ? (value as { value: unknown }).value
    : value;

/** The run's input values under `keys` (only those: an input of several MB is not read for nothing). */
async function runInputs(db: Database, runId: string, keys: string[]): Promise<Record<string, unknown>> {
  const row = await db.selectFrom('runs')
    .select(sql<Record<string, unknown> | null>`(select jsonb_object_agg(e.key, e.value) from jsonb_each(runs.inputs) e where e.key in (${sql.join(keys)}))`.as('values'))
    .where('runs.id', '=', runId).executeTakeFirst();
  if (!row) throw refuse('the run was not found');
  return row.values ?? {};
}

/**
 * The content parts of the block's files, in the order of `files`: a PDF as a `file` part (or, for a
 * model that does not read PDFs, a short text in its place), an image as an `image_url` part, both
 * with a `data:` URI whose type comes from the file's magic bytes. An input without a value is left
 * out. A value that is not a readable PDF or image fails the block for good (`LlmFileRejected`).
 */
export async function llmFileParts(
  deps: { db: Database; store: () => FileStore },
  request: { runId: string; files: LlmFileInput[] },
  modelReadsPdf: boolean,
): Promise<ChatContentPart[]> {
  const keys = [...new Set(request.files.flatMap((f) => [f.name, f.blockId]).filter((k) => k !== ''))];
  const inputs = await runInputs(deps.db, request.runId, keys);
  const parts: ChatContentPart[] = [];
  for (const file of request.files) {
    const label = file.name || file.blockId;
    const value = unwrap(inputs[file.name] ?? inputs[file.blockId] ?? file.default ?? null);
    if (value === null || value === undefined || (typeof value === 'string' && value.trim() === '')) continue;
    const loaded = await loadFile(deps, request.runId, label, value);
    if (loaded.bytes.length > LLM_FILE_MAX_BYTES) throw refuse(`file '${label}' is larger than ${LLM_FILE_MAX_BYTES} bytes`);
    const mime = sniffMime(loaded.bytes);
    if (!mime) throw refuse(`file '${label}' is neither a PDF nor a PNG, JPEG, WebP or GIF image`);
    const dataUri = `data:${mime};base64,${loaded.bytes.toString('base64')}`;
    if (mime !== 'application/pdf') {
      parts.push({ type: 'image_url', image_url: { url: dataUri } });
      continue;
    }
    const filename = loaded.filename ?? `${label}.pdf`;
    parts.push(modelReadsPdf ? { type: 'file', file: { filename, file_data: dataUri } } : { type: 'text', text: pdfOmittedHint(filename) });
  }
  return parts;
}

/** A value's bytes: a file handle of the run's project, a `data:…;base64,` URI, or bare base64. */
async function loadFile(deps: { db: Database; store: () => FileStore }, runId: string, label: string, value: unknown): Promise<{ bytes: Buffer; filename: string | null }> {
  if (typeof value !== 'string') throw refuse(`file '${label}' is not a file: expected a file handle, a data: URI or base64`);
  const text = value.trim();
  if (parseFileHandle(text)) {
    const file = await readRunFile(deps.db, deps.store(), { runId, handle: text, maxBytes: LLM_FILE_MAX_BYTES, label: `file '${label}'`, failureType: 'LlmFileRejected' });
    return { bytes: file.bytes, filename: file.originalName };
  }
  const prefix = DATA_URI.exec(text);
  const bytes = decodeBase64(prefix ? text.slice(prefix[0].length) : text);
  if (!bytes) throw refuse(`file '${label}' is not a file: expected a file handle, a data: URI or base64`);
  return { bytes, filename: null };
}
