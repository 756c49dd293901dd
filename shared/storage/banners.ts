import { Readable } from 'node:stream';
import { isPlatformAdmin } from '../access/service.js';
import type { Database } from '../db/client.js';
import { newId } from '../ids.js';
import {
  deleteStorageObjects, findStorageObject, insertStorageObject, lockStorageObject, lockStorageObjects,
  replaceStorageObjectBytes, type StorageObjectRow,
} from './banners-repository.js';
import type { FileStore } from './file-store.js';
import { normalizeContentType } from './service.js';

// The data API's storage (CONTRACTS.md "Frontend data access", docs/storage.md "Data API storage"):
// the storage protocol supabase-js speaks, on the service's own object store. One bucket, `banners`,
// public to read; a signed-in user uploads, and only the uploader or a platform administrator may
// overwrite or remove an object. Rows (storage_objects) say who owns what; the bytes of each version
// live in the object store under a key of their own, so a reader never sees half of a replacement.

export const PUBLIC_BUCKETS = ['banners'] as const;
export type BucketId = (typeof PUBLIC_BUCKETS)[number];

/** Who calls, as the data API's identity decides it (shared/data-api/identity.ts). */
export type StorageIdentity = { role: 'anon' } | { role: 'authenticated'; userId: string };

/** A refusal in the storage API's JSON shape (`statusCode` is a string there), with its HTTP status. */
export class StorageApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string, readonly error: string = code) {
    super(message);
    this.name = 'StorageApiError';
  }

  get body(): { statusCode: string; code: string; error: string; message: string } {
    return { statusCode: String(this.status), code: this.code, error: this.error, message: this.message };
  }
}

export const storageErrors = {
  noSuchKey: () => new StorageApiError(404, 'NoSuchKey', 'Object not found', 'not_found'),
  noSuchBucket: () => new StorageApiError(404, 'NoSuchBucket', 'Bucket not found', 'Bucket not found'),
  invalidKey: (name: string) => new StorageApiError(400, 'InvalidKey', `Invalid key: ${name}`),
  invalidRequest: (message: string) => new StorageApiError(400, 'InvalidRequest', message),
  duplicate: () => new StorageApiError(409, 'KeyAlreadyExists', 'The resource already exists', 'Duplicate'),
  accessDenied: (message: string) => new StorageApiError(403, 'AccessDenied', message, 'Unauthorized'),
  tooLarge: (maxBytes: number) => new StorageApiError(413, 'EntityTooLarge', `The object exceeded the maximum allowed size of ${maxBytes} bytes`, 'Payload too large'),
  invalidJwt: (message: string) => new StorageApiError(401, 'InvalidJWT', message),
};

export const isPublicBucket = (bucket: string): bucket is BucketId => (PUBLIC_BUCKETS as readonly string[]).includes(bucket);

/**
 * An object name: a relative path of non-empty segments, none `.` or `..`, no backslash or control
 * character, at most 1024 characters (the storage API's own limit on a key).
 */
export function isValidObjectName(name: string): boolean {
  // eslint-disable-next-line no-control-regex
  if (name.length === 0 || name.length > 1024 || /[\u0000-\u001f\u007f\\]/.test(name)) return false;
  return name.split('/').every((segment) => segment !== '' && segment !== '.' && segment !== '..');
}

/**
 * The uploader's content type with its parameters (a text banner keeps its charset) when its type is
 * well formed; otherwise what uploads store (`normalizeContentType`: the bare type, or
 * `application/octet-stream`).
 */
export function objectContentType(given: string | undefined): string {
  const type = normalizeContentType(given);
  const full = (given ?? '').trim();
  // eslint-disable-next-line no-control-regex
  const keepsParameters = full.toLowerCase().startsWith(`${type};`) && full.length <= 255 && !/[\u0000-\u001f\u007f]/.test(full);
  return keepsParameters ? full : type;
}

/** `Cache-Control` from the upload's `cacheControl` (seconds, supabase-js sends "3600") or its `max-age=N` header. */
export function objectCacheControl(given: string | undefined): string {
  const seconds = /^\s*(?:max-age=)?(\d{1,9})\s*$/.exec(given ?? '')?.[1];
  return `max-age=${seconds === undefined ? 3600 : Number(seconds)}`;
}

const bytesKey = () => `data-api/banners/${newId()}`;

/** The bytes, failing once more than `maxBytes` went through (the store then keeps nothing). */
function capped(stream: Readable, maxBytes: number): Readable {
  async function* limited() {
    let seen = 0;
    for await (const chunk of stream) {
      seen += (chunk as Buffer).length;
      if (seen > maxBytes) throw storageErrors.tooLarge(maxBytes);
      yield chunk as Buffer;
    }
  }
  return Readable.from(limited(), { objectMode: false });
}

export interface StorageDeps { db: Database; store: FileStore }

function requireUser(identity: StorageIdentity, action: string): string {
  if (identity.role !== 'authenticated') throw storageErrors.accessDenied(`Sign in to ${action}: the anon key alone may only read public objects`);
  return identity.userId;
}

function requireBucketAndName(bucket: string, name: string): void {
  if (!isPublicBucket(bucket)) throw storageErrors.noSuchBucket();
  if (!isValidObjectName(name)) throw storageErrors.invalidKey(name);
}

/** The uploader, or a platform administrator, may change an object; anyone else gets 403 and the object stays. */
async function requireMayChange(db: Database, object: StorageObjectRow, userId: string, action: string): Promise<void> {
  if (object.owner_id === userId || (await isPlatformAdmin(db, userId))) return;
  throw storageErrors.accessDenied(`Only the uploader or a platform administrator may ${action} this object`);
}

/** A public object to serve, or 404 (missing, removed, or a bucket that is not public). */
export async function findPublicObject(db: Database, bucket: string, name: string): Promise<StorageObjectRow> {
  const object = isPublicBucket(bucket) && isValidObjectName(name) ? await findStorageObject(db, bucket, name) : undefined;
  if (!object) throw storageErrors.noSuchKey();
  return object;
}

export interface PutObjectInput {
  identity: StorageIdentity;
  bucket: string;
  name: string;
  /** `create` (POST): a new object, or with `upsert` a replacement; `update` (PUT): an existing object only. */
  mode: 'create' | 'update';
  upsert: boolean;
  contentType: string | undefined;
  cacheControl: string | undefined;
  maxBytes: number;
}

/**
 * Checks before any byte is read (who, which bucket, whether the name is taken), so a refused upload
 * costs nothing; then the bytes go to a fresh key and the row is written under a lock, checked again
 * (a concurrent upload of the same name), so a refusal at that point leaves the store as it was.
 */
export async function putObject(
  deps: StorageDeps, input: PutObjectInput, body: () => Promise<Readable>,
): Promise<{ Key: string; Id: string }> {
  const userId = requireUser(input.identity, 'upload');
  requireBucketAndName(input.bucket, input.name);
  const decide = async (db: Database, existing: StorageObjectRow | undefined) => {
    if (!existing && input.mode === 'update') throw storageErrors.noSuchKey();
    if (existing && input.mode === 'create' && !input.upsert) throw storageErrors.duplicate();
    if (existing) await requireMayChange(db, existing, userId, 'overwrite');
  };
  await decide(deps.db, await findStorageObject(deps.db, input.bucket, input.name));

  const key = bytesKey();
  const stored = await deps.store.put(key, capped(await body(), input.maxBytes));
  const bytes = {
    storage_key: key, size: stored.size, sha256: stored.sha256,
    content_type: objectContentType(input.contentType), cache_control: objectCacheControl(input.cacheControl),
  };
  let replaced: string | null = null;
  let row: StorageObjectRow;
  try {
    row = await deps.db.transaction().execute(async (trx) => {
      const existing = await lockStorageObject(trx, input.bucket, input.name);
      await decide(trx, existing);
      if (!existing) return insertStorageObject(trx, { id: newId(), bucket_id: input.bucket, name: input.name, owner_id: userId, ...bytes });
      replaced = existing.storage_key;
      return replaceStorageObjectBytes(trx, existing.id, bytes);
    });
  } catch (error) {
    await deps.store.delete(key);
    // Two first uploads of one name at once: the loser's insert meets the unique key.
    if ((error as { code?: string }).code === '23505') throw storageErrors.duplicate();
    throw error;
  }
  if (replaced) await deps.store.delete(replaced);
  return { Key: `${row.bucket_id}/${row.name}`, Id: row.id };
}

/** An object as the storage API lists it (what `remove` answers with). */
export const objectView = (row: StorageObjectRow) => ({
  name: row.name, bucket_id: row.bucket_id, owner: row.owner_id, owner_id: row.owner_id, id: row.id,
  created_at: row.created_at.toISOString(), updated_at: row.updated_at.toISOString(), last_accessed_at: row.updated_at.toISOString(),
  metadata: { size: row.size, mimetype: row.content_type, cacheControl: row.cache_control, eTag: `"${row.sha256}"` },
});

/**
 * Removes the named objects (names that do not exist are skipped, as the storage API does) and answers
 * the removed ones. One object the caller may not remove refuses the whole request: nothing is removed.
 */
export async function removeObjects(deps: StorageDeps, input: { identity: StorageIdentity; bucket: string; prefixes: string[] }) {
  const userId = requireUser(input.identity, 'remove objects');
  if (!isPublicBucket(input.bucket)) throw storageErrors.noSuchBucket();
  const names = [...new Set(input.prefixes)].filter(isValidObjectName);
  if (names.length === 0) return [];
  const removed = await deps.db.transaction().execute(async (trx) => {
    const rows = await lockStorageObjects(trx, input.bucket, names);
    for (const row of rows) await requireMayChange(trx, row, userId, 'remove');
    if (rows.length > 0) await deleteStorageObjects(trx, rows.map((row) => row.id));
    return rows;
  });
  // After the commit: a failed delete leaves unreferenced bytes, never a row without its bytes.
  for (const row of removed) await deps.store.delete(row.storage_key);
  return removed.map(objectView);
}
