import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** What a store reports about an object it has just written. */
export interface StoredObject {
  size: number;
  /** Lowercase hex sha256 of the bytes written. */
  sha256: string;
}

/**
 * Where uploaded bytes live. Keys are chosen by the service (never by a client): lowercase
 * letters, digits, `-`, `_` and `/` separators (see `isValidStorageKey`). A put is all or nothing:
 * a reader never sees a partial object, and a failed put leaves nothing behind.
 */
export interface FileStore {
  put(key: string, stream: Readable): Promise<StoredObject>;
  /**
   * The object's bytes (or the inclusive byte `range` of them); rejects with
   * `FileNotFoundInStoreError` when there is none.
   */
  get(key: string, range?: ByteSpan): Promise<Readable>;
  /** The object's size, or null when there is none. */
  stat(key: string): Promise<{ size: number } | null>;
  /** Removes the object; removing a missing one is not an error. */
  delete(key: string): Promise<void>;
}

/** Inclusive byte offsets, as in `Content-Range`. */
export interface ByteSpan { start: number; end: number }

export class FileNotFoundInStoreError extends Error {
  constructor(readonly key: string) {
    super(`No stored object under ${key}`);
    this.name = 'FileNotFoundInStoreError';
  }
}

const KEY = /^[a-z0-9][a-z0-9_-]*(?:\/[a-z0-9][a-z0-9_-]*)*$/;

/** Keys are relative paths of safe segments: no `..`, no leading `/`, no dots, at most 200 characters. */
export const isValidStorageKey = (key: string): boolean => key.length <= 200 && KEY.test(key);

/** The storage key of an uploaded file: fanned out by the id's first two characters. */
export const storageKeyForFile = (fileId: string): string => `${fileId.slice(0, 2).toLowerCase()}/${fileId.toLowerCase()}`;

/**
 * Local-disk store under `root` (default `DATA_DIR/files`). Writes go to `root/.tmp/<random>`
 * (same file system) and are renamed into place once complete and flushed, so an object either
 * exists whole or not at all.
 */
export class LocalFileStore implements FileStore {
  constructor(readonly root: string) {}

  /** Absolute path of a key; throws for a key that could leave the root. */
  pathOf(key: string): string {
    if (!isValidStorageKey(key)) throw new Error(`invalid storage key: ${JSON.stringify(key)}`);
    return path.join(this.root, ...key.split('/'));
  }

  async put(key: string, stream: Readable): Promise<StoredObject> {
    const target = this.pathOf(key);
    const tmpDir = path.join(this.root, '.tmp');
    await mkdir(tmpDir, { recursive: true });
    await mkdir(path.dirname(target), { recursive: true });
    const tmp = path.join(tmpDir, `${randomBytes(12).toString('hex')}.part`);
    const hash = createHash('sha256');
    let size = 0;
    const measure = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        size += chunk.length;
        hash.update(chunk);
        done(null, chunk);
      },
    });
    // Created before streaming, and the write stream opens it with 'r+' (never creates): a failure
    // cannot race a lazy open into leaving a temp file behind after the clean-up below.
    await (await open(tmp, 'wx', 0o600)).close();
    try {
      await pipeline(stream, measure, createWriteStream(tmp, { flags: 'r+', flush: true }));
      await rename(tmp, target);
    } catch (error) {
      await rm(tmp, { force: true });
      throw error;
    }
    return { size, sha256: hash.digest('hex') };
  }

  async get(key: string, range?: ByteSpan): Promise<Readable> {
    if (!(await this.stat(key))) throw new FileNotFoundInStoreError(key);
    return createReadStream(this.pathOf(key), range ? { start: range.start, end: range.end } : {});
  }

  async stat(key: string): Promise<{ size: number } | null> {
    try {
      const info = await stat(this.pathOf(key));
      return info.isFile() ? { size: info.size } : null;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    await rm(this.pathOf(key), { force: true });
  }
}

/** The store the API uses: local disk under `DATA_DIR/files`. */
export const createFileStore = (config: { DATA_DIR: string }): FileStore => new LocalFileStore(path.join(config.DATA_DIR, 'files'));
