import { isUuid } from '../ids.js';

/** The canonical file-handle scheme (CONTRACTS.md "Token formats"). */
export const FILE_HANDLE_PREFIX = 'wf-file:';
/** The other accepted form. */
export const STORAGE_URL_PREFIX = 'storage://';

/** `wf-file:<id>`, the form the API hands out. */
export const formatFileHandle = (fileId: string): string => `${FILE_HANDLE_PREFIX}${fileId.toLowerCase()}`;

/**
 * The file id of a handle, or null when `text` is not one: exactly `wf-file:<uuid>` or
 * `storage://<uuid>` (scheme in lowercase, no whitespace, nothing after the id). The id is
 * returned in lowercase. File ids are minted by `newId` (a uuid, the `files.id` column type), so
 * any other id names no file: the input limits count it as text, and the run engine does not read
 * it as a PDF source. This is the one handle rule; it imports nothing with I/O, since workflow code
 * reads it (shared/app-runs/evaluate.ts).
 */
export function parseFileHandle(text: unknown): string | null {
  if (typeof text !== 'string' || text.length > 255) return null;
  const prefix = text.startsWith(FILE_HANDLE_PREFIX) ? FILE_HANDLE_PREFIX : text.startsWith(STORAGE_URL_PREFIX) ? STORAGE_URL_PREFIX : null;
  if (!prefix) return null;
  const id = text.slice(prefix.length);
  return isUuid(id) ? id.toLowerCase() : null;
}

/** Whether `text` is a well-formed file handle (it may still name no file). */
export const isFileHandle = (text: unknown): boolean => parseFileHandle(text) !== null;
