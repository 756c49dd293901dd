import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AppError } from '../errors.js';
import { DownloadCache, type CacheableObject, type FillOutcome } from './download-cache.js';
import { LocalFileStore, type FileStore } from './file-store.js';

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** The production store refuses anything but regular files; this one also reads a FIFO, whose writer the test controls. */
class FifoReadingStore extends LocalFileStore {
  override async stat(key: string): Promise<{ size: number } | null> {
    const info = await stat(this.pathOf(key)).catch(() => null);
    return info && (info.isFile() || info.isFIFO()) ? { size: info.size } : null;
  }
}

describe('DownloadCache: bounded, content-addressed, verified, single flight', () => {
  let work: string;
  let dir: string;
  let store: LocalFileStore;
  let outcomes: FillOutcome[];
  const caches: DownloadCache[] = [];

  const openCache = async (options: { maxBytes?: number; stallTimeoutMs?: number; store?: FileStore } = {}) => {
    const cache = await DownloadCache.open({
      dir, maxBytes: options.maxBytes ?? 1024 * 1024, stallTimeoutMs: options.stallTimeoutMs ?? 5_000,
      store: options.store ?? store, onFill: (outcome) => outcomes.push(outcome),
    });
    caches.push(cache);
    return cache;
  };
  /** Puts random bytes in the store; returns what the registration would say about them. */
  const storeObject = async (size: number): Promise<CacheableObject & { bytes: Buffer }> => {
    const bytes = randomBytes(size);
    const hash = sha256(bytes);
    const storageKey = `board-app/macos-arm64/${hash}`;
    await store.put(storageKey, Readable.from([bytes]));
    return { sha256: hash, size, storageKey, bytes };
  };
  const cacheDirNames = async () => (await readdir(dir)).sort();
  const rejection = async (promise: Promise<unknown>) => {
    const error = await promise.then(() => null, (e: unknown) => e);
    expect(error).toBeInstanceOf(AppError);
    return { status: (error as AppError).status, code: (error as AppError).error, message: (error as AppError).message };
  };

  beforeEach(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'download-cache-'));
    dir = path.join(work, 'cache');
    store = new LocalFileStore(path.join(work, 'objects'));
    outcomes = [];
  });
  afterEach(async () => {
    caches.length = 0;
    await rm(work, { recursive: true, force: true });
  });

  it('20 concurrent first requests fill once; the copy is the object, byte for byte, named by its sha256', async () => {
    const cache = await openCache();
    const object = await storeObject(300_000);
    const paths = await Promise.all(Array.from({ length: 20 }, () => cache.ensure(object)));
    expect(new Set(paths)).toEqual(new Set([path.join(dir, object.sha256)]));
    expect(cache.fills).toBe(1);
    expect(outcomes).toEqual(['filled']);
    expect((await readFile(paths[0]!)).equals(object.bytes)).toBe(true);
    expect(await cacheDirNames()).toEqual([object.sha256]);
    expect(cache.totalBytes).toBe(300_000);
    // Served from the cache from now on.
    await cache.ensure(object);
    expect(cache.fills).toBe(1);
  });

  it('a corrupted object (same size, other bytes; or another size) is 502 and nothing is published', async () => {
    const cache = await openCache();
    const object = await storeObject(10_000);
    await writeFile(store.pathOf(object.storageKey), randomBytes(10_000));
    expect(await rejection(cache.ensure(object))).toMatchObject({ status: 502, code: 'STORAGE_ERROR' });
    await writeFile(store.pathOf(object.storageKey), object.bytes.subarray(0, 9_999));
    expect(await rejection(cache.ensure(object))).toMatchObject({ status: 502, code: 'STORAGE_ERROR' });
    await writeFile(store.pathOf(object.storageKey), Buffer.concat([object.bytes, Buffer.from('x')]));
    expect(await rejection(cache.ensure(object))).toMatchObject({ status: 502, code: 'STORAGE_ERROR' });
    expect(outcomes).toEqual(['mismatch', 'mismatch', 'mismatch']);
    expect(await cacheDirNames()).toEqual([]);
    expect(cache.has(object.sha256)).toBe(false);
    expect(cache.totalBytes).toBe(0);
  });

  it('a missing object is 404; a failing store is 502; neither message names a path or key', async () => {
    const cache = await openCache();
    const object = await storeObject(1_000);
    await store.delete(object.storageKey);
    const missing = await rejection(cache.ensure(object));
    expect(missing).toMatchObject({ status: 404, code: 'NOT_FOUND' });

    const failing: FileStore = {
      put: () => Promise.reject(new Error('unused')),
      stat: () => Promise.resolve({ size: 1_000 }),
      delete: () => Promise.resolve(),
      // The read breaks after some bytes, as a disk or network error would.
      get: () => Promise.resolve(new Readable({
        read() {
          this.push(object.bytes.subarray(0, 100));
          this.destroy(Object.assign(new Error(`EIO reading ${store.pathOf(object.storageKey)}`), { code: 'EIO' }));
        },
      })),
    };
    const broken = await openCache({ store: failing });
    const failed = await rejection(broken.ensure(object));
    expect(failed).toMatchObject({ status: 502, code: 'STORAGE_ERROR' });
    const refused: FileStore = { ...failing, get: () => Promise.reject(new Error(`EACCES ${work}`)) };
    expect(await rejection((await openCache({ store: refused })).ensure(object))).toMatchObject({ status: 502, code: 'STORAGE_ERROR' });

    expect(outcomes).toEqual(['not_found', 'storage_error', 'storage_error']);
    for (const { message } of [missing, failed]) {
      expect(message).not.toContain(work);
      expect(message).not.toContain(object.sha256);
    }
    expect(await cacheDirNames()).toEqual([]);
  });

  it('a store that stops sending is 504 after the stall timeout, and leaves no temp file', async () => {
    const fifoStore = new FifoReadingStore(path.join(work, 'objects'));
    const cache = await openCache({ store: fifoStore, stallTimeoutMs: 300 });
    const object = await storeObject(100_000);
    const fifo = fifoStore.pathOf(object.storageKey);
    await unlink(fifo);
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    // The writer sends a few bytes, then holds the pipe open without writing.
    const writer: ChildProcess = spawn('sh', ['-c', '{ printf partial; exec sleep 60; } > "$1"', 'sh', fifo], { stdio: 'ignore' });
    try {
      const started = Date.now();
      expect(await rejection(cache.ensure(object))).toMatchObject({ status: 504, code: 'STORAGE_TIMEOUT' });
      const elapsed = Date.now() - started;
      expect(elapsed).toBeGreaterThanOrEqual(250);
      expect(elapsed).toBeLessThan(3_000);
      expect(outcomes).toEqual(['timeout']);
      expect(await cacheDirNames()).toEqual([]);
    } finally {
      writer.kill('SIGKILL');
    }
  });

  it('evicts the least recently used entries to stay within the bound, never the one just filled', async () => {
    const cache = await openCache({ maxBytes: 250 });
    const [a, b, c] = [await storeObject(100), await storeObject(100), await storeObject(100)];
    await cache.ensure(a);
    await cache.ensure(b);
    await cache.ensure(a); // a is now more recent than b
    await cache.ensure(c);
    expect(cache.has(a.sha256)).toBe(true);
    expect(cache.has(b.sha256)).toBe(false);
    expect(cache.has(c.sha256)).toBe(true);
    expect(cache.totalBytes).toBe(200);
    expect(await cacheDirNames()).toEqual([a.sha256, c.sha256].sort());

    // A file as large as the whole cache pushes everything else out.
    const big = await storeObject(250);
    await cache.ensure(big);
    expect(await cacheDirNames()).toEqual([big.sha256]);
    expect(cache.totalBytes).toBe(250);
  });

  it('a copy removed behind its back is filled again when opened', async () => {
    const cache = await openCache();
    const object = await storeObject(5_000);
    await cache.ensure(object);
    await unlink(path.join(dir, object.sha256));
    const fd = await cache.openFile(object);
    const { close, read } = await import('node:fs');
    const buffer = Buffer.alloc(5_000);
    await new Promise<void>((resolve, reject) => read(fd, buffer, 0, 5_000, 0, (error) => (error ? reject(error) : resolve())));
    close(fd);
    expect(buffer.equals(object.bytes)).toBe(true);
    expect(cache.fills).toBe(2);
  });

  it('opening again: temp files are removed, copies indexed oldest first and trimmed to a smaller bound', async () => {
    const first = await openCache();
    const [a, b, c] = [await storeObject(100), await storeObject(100), await storeObject(100)];
    for (const object of [a, b, c]) await first.ensure(object);
    // Fill order is recency after a restart: a oldest.
    const epoch = Date.now() / 1000;
    await utimes(path.join(dir, a.sha256), epoch - 30, epoch - 30);
    await utimes(path.join(dir, b.sha256), epoch - 20, epoch - 20);
    await utimes(path.join(dir, c.sha256), epoch - 10, epoch - 10);
    await writeFile(path.join(dir, `.${a.sha256}.abc.part`), 'half');

    const reopened = await openCache({ maxBytes: 200 });
    expect(reopened.totalBytes).toBe(200);
    expect(await cacheDirNames()).toEqual([b.sha256, c.sha256].sort());
    await reopened.ensure(b);
    expect(reopened.fills).toBe(0);
  });
});
