import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../api/app.js';
import type { BoardDownloadRouteOptions } from '../../api/routes/public-config/board-downloads.js';
import { registerBoardAsset } from '../../shared/public-config/board-assets.js';
import { downloadCacheDir } from '../../shared/storage/download-cache.js';
import { LocalFileStore } from '../../shared/storage/file-store.js';
import { objectKeys, objectStoreDir } from '../../shared/storage/object-store.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

const ASSET_BYTES = 120_000;

/** The production store reads regular files only; this one also reads a FIFO, whose writer the test holds. */
class FifoReadingStore extends LocalFileStore {
  override async stat(key: string): Promise<{ size: number } | null> {
    const info = await stat(this.pathOf(key)).catch(() => null);
    return info && (info.isFile() || info.isFIFO()) ? { size: info.size } : null;
  }
}

// A small cache (room for two of the test's assets) so that eviction shows; the upload limit is
// below it, as start-up demands.
describe('board downloads: the bounded cache behind the route (spec §8.2)', () => {
  let stack: TestStack;
  let base: string;
  let cacheDir: string;

  const register = async (name: string, size = ASSET_BYTES) => {
    const bytes = randomBytes(size);
    const file = path.join(stack.config.DATA_DIR, 'work', name);
    await writeFile(file, bytes);
    const asset = await registerBoardAsset({ db: stack.db, config: stack.config }, { kind: 'board-app', target: 'windows-x86_64', filePath: file, fileName: name });
    return { bytes, path: asset.path, sha256: asset.sha256 };
  };
  const download = async (asset: { bytes: Buffer; path: string }) => {
    const response = await fetch(`${base}${asset.path}`);
    expect(response.status).toBe(200);
    const body = Buffer.from(await response.arrayBuffer());
    expect(body.equals(asset.bytes)).toBe(true);
  };
  const cached = async () => (await readdir(cacheDir)).sort();
  const fillCount = async (app = stack.app, outcome = 'filled') => {
    const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    const line = text.split('\n').find((l) => l.startsWith(`board_download_cache_fills_total{outcome="${outcome}"}`));
    return line ? Number(line.split(' ').at(-1)) : 0;
  };

  beforeAll(async () => {
    stack = await createTestStack({ DOWNLOAD_CACHE_MAX_BYTES: String(2 * ASSET_BYTES + 50_000), STORAGE_MAX_UPLOAD_BYTES: '100000' });
    base = await stack.app.listen({ port: 0, host: '127.0.0.1' });
    cacheDir = downloadCacheDir(stack.config);
    await mkdir(path.join(stack.config.DATA_DIR, 'work'));
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('20 concurrent first requests over HTTP fill the cache once', async () => {
    const asset = await register('Concurrent-1.0.exe');
    const before = await fillCount();
    await Promise.all(Array.from({ length: 20 }, () => download(asset)));
    expect(await fillCount()).toBe(before + 1);
    expect(await cached()).toContain(asset.sha256);
  });

  it('evicts the least recently used file to stay within DOWNLOAD_CACHE_MAX_BYTES, and fills it again when asked', async () => {
    const [a, b, c] = [await register('A-1.0.exe'), await register('B-1.0.exe'), await register('C-1.0.msi')];
    const before = await fillCount();
    await download(a);
    await download(b);
    await download(a); // a is now more recent than b (and than the previous test's file)
    await download(c);
    expect(await fillCount()).toBe(before + 3);
    expect(await cached()).toEqual([a.sha256, c.sha256].sort());
    const held = (await Promise.all((await cached()).map(async (name) => (await stat(path.join(cacheDir, name))).size))).reduce((x, y) => x + y, 0);
    expect(held).toBeLessThanOrEqual(stack.config.DOWNLOAD_CACHE_MAX_BYTES);

    await download(b); // filled again; a is now the least recently used
    expect(await fillCount()).toBe(before + 4);
    expect(await cached()).toEqual([b.sha256, c.sha256].sort());
    // A range of an evicted file fills it too, and answers just the range.
    const response = await fetch(`${base}${a.path}`, { headers: { range: 'bytes=10-19' } });
    expect(response.status).toBe(206);
    expect(Buffer.from(await response.arrayBuffer()).equals(a.bytes.subarray(10, 20))).toBe(true);
  });

  it('start-up fails fast when the cache is smaller than the upload limit or the largest registered asset', async () => {
    const largest = 2 * ASSET_BYTES; // within the cache, above the upload limit: registered by the CLI's rules
    await register('Large-1.0.msi', largest);
    const withCache = (cacheBytes: number, uploadBytes: number) => buildApp(
      { ...stack.deps, config: { ...stack.config, DOWNLOAD_CACHE_MAX_BYTES: cacheBytes, STORAGE_MAX_UPLOAD_BYTES: uploadBytes, DOWNLOAD_CACHE_DIR: path.join(stack.config.DATA_DIR, 'other-cache') } },
      { logger: false },
    );
    await expect(withCache(largest + 10, largest + 11)).rejects.toThrow(/DOWNLOAD_CACHE_MAX_BYTES \(\d+\) must be at least STORAGE_MAX_UPLOAD_BYTES/);
    await expect(withCache(largest - 1, 1_000)).rejects.toThrow(new RegExp(`largest registered board asset \\(${largest} bytes\\)`));
    const fits = await withCache(largest, largest);
    await fits.close();
  });

  it('a store that stops sending mid-file → 504 within the stall timeout, nothing cached', async () => {
    const asset = await register('Stalled-1.0.exe', 50_000);
    const store = new FifoReadingStore(objectStoreDir(stack.config));
    const fifo = store.pathOf(objectKeys.boardAsset('board-app', 'windows-x86_64', asset.sha256));
    await unlink(fifo);
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    const stalledCacheDir = path.join(stack.config.DATA_DIR, 'stalled-cache');
    // The whole API as production builds it, with a 300 ms stall timeout and a store that reads the FIFO.
    const deps: BoardDownloadRouteOptions = {
      ...stack.deps, config: { ...stack.config, DOWNLOAD_STALL_TIMEOUT_MS: 300, DOWNLOAD_CACHE_DIR: stalledCacheDir }, objectStore: store,
    };
    const app = await buildApp(deps, { logger: false });
    // The writer sends a few bytes, then keeps the pipe open without writing.
    const writer = spawn('sh', ['-c', '{ printf partial; exec sleep 60; } > "$1"', 'sh', fifo], { stdio: 'ignore' });
    try {
      const started = Date.now();
      const response = await app.inject({ method: 'GET', url: asset.path });
      const elapsed = Date.now() - started;
      expect(response.statusCode).toBe(504);
      expect(response.json()).toEqual({ success: false, error: { code: 'STORAGE_TIMEOUT', message: expect.any(String) } });
      expect(elapsed).toBeGreaterThanOrEqual(250);
      expect(elapsed).toBeLessThan(5_000);
      expect(await readdir(stalledCacheDir)).toEqual([]);
      expect(await fillCount(app, 'timeout')).toBe(1);
    } finally {
      writer.kill('SIGKILL');
      await app.close();
    }
  });
});
