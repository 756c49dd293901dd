import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Config } from '../config.js';
import { LocalFileStore, type FileStore } from './file-store.js';

// The object store of public downloads (board assets, device firmware): the same all-or-nothing
// local store as uploads, rooted at OBJECT_STORE_DIR. Keys are made here from values the service has
// already validated (a registered sha256, a known channel or platform), so no caller's text ever
// becomes a storage path.

export type BoardAssetKind = 'board-firmware' | 'board-app';

export const objectKeys = {
  /** `board-firmware/stable/<sha256>`, `board-app/macos-arm64/<sha256>`. */
  boardAsset: (kind: BoardAssetKind, target: string, sha256: string) => `${kind}/${target}/${sha256}`,
  /** Device firmware is stored by content: the registration row maps (model, module, file name) to it. */
  firmware: (sha256: string) => `firmware/${sha256}`,
};

export const objectStoreDir = (config: Pick<Config, 'DATA_DIR' | 'OBJECT_STORE_DIR'>): string =>
  config.OBJECT_STORE_DIR ?? path.join(config.DATA_DIR, 'objects');

export const createObjectStore = (config: Pick<Config, 'DATA_DIR' | 'OBJECT_STORE_DIR'>): FileStore & { pathOf(key: string): string } =>
  new LocalFileStore(objectStoreDir(config));

/** The file changed between the hash and the store's write: nothing was stored. */
export class FileChangedWhileStoringError extends Error {
  constructor(readonly filePath: string) {
    super(`${filePath} changed while it was being stored; store it again`);
    this.name = 'FileChangedWhileStoringError';
  }
}

async function sha256OfFile(filePath: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(filePath), hash);
  return hash.digest('hex');
}

/** The file's bytes, failing at their end when they no longer hash to `sha256` (the store then publishes nothing). */
function bytesHashingTo(filePath: string, sha256: string): Readable {
  const hash = createHash('sha256');
  const source = createReadStream(filePath);
  const checked = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      done(null, chunk);
    },
    flush(done) {
      done(hash.digest('hex') === sha256 ? null : new FileChangedWhileStoringError(filePath));
    },
  });
  source.on('error', (error) => checked.destroy(error));
  return source.pipe(checked);
}

/**
 * Stores a local file under a key that names its content (`keyFor(sha256)`). The hash comes from a
 * first read; an object already under the key holds exactly those bytes (puts are all or nothing)
 * and is kept; otherwise the write is checked against the hash, so a file changed in between
 * leaves the store as it was.
 */
export async function putFileByContent(
  store: FileStore, keyFor: (sha256: string) => string, filePath: string,
): Promise<{ key: string; sha256: string; size: number }> {
  const sha256 = await sha256OfFile(filePath);
  const key = keyFor(sha256);
  const existing = await store.stat(key);
  if (existing) return { key, sha256, size: existing.size };
  const stored = await store.put(key, bytesHashingTo(filePath, sha256));
  return { key, sha256, size: stored.size };
}
