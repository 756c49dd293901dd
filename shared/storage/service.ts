import type { Readable } from 'node:stream';
import { projectAccess } from '../access/service.js';
import type { Database } from '../db/client.js';
import { AppError } from '../errors.js';
import { isUuid, newId } from '../ids.js';
import { storageKeyForFile, type FileStore } from './file-store.js';
import { formatFileHandle, parseFileHandle } from './handles.js';
import * as repo from './repository.js';

/** Who uploads: a signed-in user, or an API key (acting as its creator, in its own team only). */
export type StorageCaller =
  | { kind: 'jwt'; userId: string }
  | { kind: 'api-key'; userId: string; teamId: string; apiKeyId: string };

export interface UploadedFile {
  fileId: string;
  handle: string;
  size: number;
  contentType: string;
  sha256: string;
  originalName: string | null;
  storageKey: string;
}

export const projectNotFound = () => new AppError(404, 'Project not found', 'Project not found');
export const fileNotFound = () => new AppError(404, 'File not found', 'File not found');

/**
 * The project a caller may upload to. A JWT user must be a member of the project's team; an API
 * key's team must be the project's team. A project the caller cannot use answers exactly like a
 * missing (or deleted) one.
 */
export async function requireUploadProject(db: Database, caller: StorageCaller, projectId: string): Promise<{ id: string; teamId: string }> {
  const project = await projectAccess(db, caller, projectId);
  if (!project || project.access === 'none') throw projectNotFound();
  return { id: project.id, teamId: project.team_id };
}

const MIME = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;

/** The client's content type without parameters, lowercased; `application/octet-stream` when absent or malformed. */
export function normalizeContentType(given: string | undefined): string {
  const type = (given ?? '').split(';')[0]!.trim().toLowerCase();
  return MIME.test(type) ? type : 'application/octet-stream';
}

/** The client's file name for display only: last path segment, no control characters, at most 255 characters. */
export function cleanOriginalName(given: string | undefined): string | null {
  // eslint-disable-next-line no-control-regex
  const name = (given ?? '').split(/[\\/]/).pop()!.replace(/[\u0000-\u001f\u007f]/g, '').trim().slice(0, 255);
  return name === '' || name === '.' || name === '..' ? null : name;
}

/**
 * Writes one upload's bytes to the store under a fresh id. `truncated()` is asked once the stream
 * has ended (the multipart parser stops at the size limit and says so): a truncated upload is
 * removed again and answers 413 `file_too_large`. Nothing is recorded in the database yet.
 */
export async function storeUploadBytes(
  store: FileStore,
  input: { stream: Readable; truncated: () => boolean; maxBytes: number },
): Promise<{ fileId: string; storageKey: string; size: number; sha256: string }> {
  const fileId = newId();
  const storageKey = storageKeyForFile(fileId);
  const { size, sha256 } = await store.put(storageKey, input.stream);
  if (input.truncated() || size > input.maxBytes) {
    await store.delete(storageKey);
    throw fileTooLarge(input.maxBytes);
  }
  return { fileId, storageKey, size, sha256 };
}

export const fileTooLarge = (maxBytes: number) =>
  new AppError(413, 'file_too_large', `The file is larger than the upload limit of ${maxBytes} bytes`, { maxBytes });

/** Records stored bytes as a project file. When the insert fails the bytes are removed again. */
export async function recordUpload(db: Database, store: FileStore, input: {
  caller: StorageCaller; project: { id: string; teamId: string };
  stored: { fileId: string; storageKey: string; size: number; sha256: string };
  contentType: string | undefined; originalName: string | undefined;
}): Promise<UploadedFile> {
  const { caller, project, stored } = input;
  try {
    const row = await repo.insertFile(db, {
      id: stored.fileId, project_id: project.id, team_id: project.teamId,
      uploaded_by: caller.userId, api_key_id: caller.kind === 'api-key' ? caller.apiKeyId : null,
      size: stored.size, content_type: normalizeContentType(input.contentType), original_name: cleanOriginalName(input.originalName),
      sha256: stored.sha256, storage_key: stored.storageKey,
    });
    return {
      fileId: row.id, handle: formatFileHandle(row.id), size: row.size, contentType: row.content_type,
      sha256: row.sha256, originalName: row.original_name, storageKey: row.storage_key,
    };
  } catch (error) {
    await store.delete(stored.storageKey);
    throw error;
  }
}

export interface OpenedFile {
  fileId: string;
  projectId: string;
  size: number;
  contentType: string;
  originalName: string | null;
  sha256: string;
  stream: Readable;
}

/**
 * For the run engine: opens the file a handle (`wf-file:<id>` or `storage://<id>`) names, if it
 * belongs to `projectId`. A malformed handle is 400 `invalid_file_handle`; a file that does not
 * exist, is deleted or belongs to another project is 404 `File not found` (the same answer).
 */
export async function readFile(db: Database, store: FileStore, handle: string, projectId: string): Promise<OpenedFile> {
  const fileId = parseFileHandle(handle);
  if (!fileId) throw new AppError(400, 'invalid_file_handle', 'Expected a file handle wf-file:<id> or storage://<id>');
  const row = isUuid(projectId) ? await repo.findProjectFile(db, fileId, projectId) : undefined;
  if (!row) throw fileNotFound();
  return {
    fileId: row.id, projectId: row.project_id, size: row.size, contentType: row.content_type,
    originalName: row.original_name, sha256: row.sha256, stream: await store.get(row.storage_key),
  };
}

/** `readFile` into memory; 413 `file_too_large` without reading when the file is bigger than `maxBytes`. */
export async function readFileBuffer(
  db: Database, store: FileStore, handle: string, projectId: string, options: { maxBytes: number },
): Promise<Omit<OpenedFile, 'stream'> & { bytes: Buffer }> {
  const opened = await readFile(db, store, handle, projectId);
  const { stream, ...meta } = opened;
  if (meta.size > options.maxBytes) {
    stream.destroy();
    throw fileTooLarge(options.maxBytes);
  }
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return { ...meta, bytes: Buffer.concat(chunks) };
}
