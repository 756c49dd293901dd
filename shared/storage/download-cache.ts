import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, open as openCallback } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Config } from '../config.js';
import { AppError } from '../errors.js';
import { FileNotFoundInStoreError, type FileStore } from './file-store.js';

// The bounded, content-addressed local cache that public downloads are served from (spec §4.10,
// §8.2). A file is named by its sha256 and appears only whole and verified: a fill streams the
// object from the store into a temp file in the same directory while hashing and counting, checks
// size and sha256 against the registration, and renames it into place. The index lives in memory
// (rebuilt from the directory at start), least recently used first; one process owns a directory.

/** What to cache: the registered content and where the object store keeps it. */
export interface CacheableObject {
  sha256: string;
  size: number;
  /** The object store key, made by the service from validated values. */
  storageKey: string;
}

export type FillOutcome = 'filled' | 'not_found' | 'storage_error' | 'timeout' | 'mismatch' | 'failed';

export interface DownloadCacheOptions {
  dir: string;
  maxBytes: number;
  /** A fill that receives no bytes for this long fails with 504 (rolling, per chunk). */
  stallTimeoutMs: number;
  store: FileStore;
  /** Told once per fill, with how it ended (metrics, logs). */
  onFill?: (outcome: FillOutcome, object: CacheableObject, error?: unknown) => void;
}

const CACHED_NAME = /^[0-9a-f]{64}$/;
const TEMP_SUFFIX = '.part';

export const downloadCacheDir = (config: Pick<Config, 'DATA_DIR' | 'DOWNLOAD_CACHE_DIR'>): string =>
  config.DOWNLOAD_CACHE_DIR ?? path.join(config.DATA_DIR, 'download-cache');

// Caller-facing errors name no path or key; the cause goes to the log through `onFill`.
const objectMissing = () => new AppError(404, 'NOT_FOUND', 'The file is not available');
const storageFailed = () => new AppError(502, 'STORAGE_ERROR', 'The file could not be read from storage; try again later');
const storageCorrupt = () => new AppError(502, 'STORAGE_ERROR', 'The stored file failed verification; try again later');
const storageStalled = () => new AppError(504, 'STORAGE_TIMEOUT', 'Storage stopped sending the file; try again later');

/** A failure of the object store's side of a fill (as opposed to our disk's). */
class SourceError extends Error {
  constructor(readonly response: AppError, readonly outcome: FillOutcome, options?: ErrorOptions) {
    super(response.message, options);
  }
}

/** A timer that fails `expired` after `ms` without a `touch()`. */
function stallTimer(ms: number) {
  let fire!: (error: SourceError) => void;
  const expired = new Promise<never>((_resolve, reject) => { fire = reject; });
  expired.catch(() => {}); // raced below; never an unhandled rejection
  const timer = setTimeout(() => fire(new SourceError(storageStalled(), 'timeout')), ms);
  let stopped = false;
  return {
    expired,
    touch: () => { if (!stopped) timer.refresh(); },
    stop: () => { stopped = true; clearTimeout(timer); },
  };
}

const openForReading = (file: string) => new Promise<number>((resolve, reject) => {
  openCallback(file, 'r', (error, fd) => (error ? reject(error) : resolve(fd)));
});

export class DownloadCache {
  /** sha256 → size; Map order is recency, least recently used first. */
  private readonly entries = new Map<string, number>();
  private readonly fillsInFlight = new Map<string, Promise<string>>();
  /** Evicted files still being unlinked: a refill of the same sha waits for them before its rename. */
  private readonly removals = new Map<string, Promise<void>>();
  private total = 0;
  private fillsStarted = 0;

  private constructor(private readonly options: DownloadCacheOptions) {}

  /** Opens the cache directory: leftover temp files are removed, the rest indexed oldest first and trimmed to the bound. */
  static async open(options: DownloadCacheOptions): Promise<DownloadCache> {
    const cache = new DownloadCache(options);
    await mkdir(options.dir, { recursive: true });
    const found: Array<{ sha256: string; size: number; mtimeMs: number }> = [];
    for (const name of await readdir(options.dir)) {
      const file = path.join(options.dir, name);
      if (name.endsWith(TEMP_SUFFIX)) {
        await rm(file, { force: true });
        continue;
      }
      if (!CACHED_NAME.test(name)) continue;
      const info = await stat(file);
      if (info.isFile()) found.push({ sha256: name, size: info.size, mtimeMs: info.mtimeMs });
    }
    found.sort((a, b) => a.mtimeMs - b.mtimeMs);
    for (const { sha256, size } of found) cache.remember(sha256, size);
    await cache.evictBeyond(options.maxBytes, null);
    return cache;
  }

  /** How many fills have started since the cache opened (the single-flight proof). */
  get fills(): number { return this.fillsStarted; }
  get totalBytes(): number { return this.total; }
  get maxBytes(): number { return this.options.maxBytes; }
  has(sha256: string): boolean { return this.entries.has(sha256); }
  pathOf(sha256: string): string { return path.join(this.options.dir, sha256); }

  /**
   * The path of the object's verified local copy, filling it first when absent. Concurrent calls for
   * one sha256 share one fill. Rejects with AppError: 404 `NOT_FOUND` (no such object in the store),
   * 502 `STORAGE_ERROR` (store failure, or bytes that do not match `size` and `sha256`), 504
   * `STORAGE_TIMEOUT` (no bytes for `stallTimeoutMs`).
   */
  ensure(object: CacheableObject): Promise<string> {
    const size = this.entries.get(object.sha256);
    if (size === object.size) {
      this.entries.delete(object.sha256);
      this.entries.set(object.sha256, size);
      return Promise.resolve(this.pathOf(object.sha256));
    }
    if (size !== undefined) this.forget(object.sha256); // a copy that does not match the registration
    let fill = this.fillsInFlight.get(object.sha256);
    if (!fill) {
      fill = this.fill(object).finally(() => this.fillsInFlight.delete(object.sha256));
      this.fillsInFlight.set(object.sha256, fill);
    }
    return fill;
  }

  /**
   * A file descriptor on the object's local copy (the caller closes it). A copy evicted between
   * `ensure` and the open is filled again, once.
   */
  async openFile(object: CacheableObject): Promise<number> {
    try {
      return await openForReading(await this.ensure(object));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      this.forget(object.sha256);
      return openForReading(await this.ensure(object));
    }
  }

  private remember(sha256: string, size: number): void {
    this.entries.set(sha256, size);
    this.total += size;
  }

  private forget(sha256: string): void {
    const size = this.entries.get(sha256);
    if (size === undefined) return;
    this.entries.delete(sha256);
    this.total -= size;
  }

  /** Removes least recently used entries other than `keep` until the total is at most `limit`. */
  private async evictBeyond(limit: number, keep: string | null): Promise<void> {
    const removals: Array<Promise<void>> = [];
    for (const sha256 of this.entries.keys()) {
      if (this.total <= limit) break;
      if (sha256 === keep) continue;
      this.forget(sha256);
      const removal = rm(this.pathOf(sha256), { force: true }).finally(() => {
        if (this.removals.get(sha256) === removal) this.removals.delete(sha256);
      });
      this.removals.set(sha256, removal);
      removals.push(removal);
    }
    await Promise.all(removals);
  }

  private async fill(object: CacheableObject): Promise<string> {
    this.fillsStarted++;
    const { sha256, size, storageKey } = object;
    const target = this.pathOf(sha256);
    const temp = path.join(this.options.dir, `.${sha256}.${randomBytes(6).toString('hex')}${TEMP_SUFFIX}`);
    const stall = stallTimer(this.options.stallTimeoutMs);
    let source: Readable | null = null;
    let abandoned = false;
    try {
      if (size > this.options.maxBytes) throw new AppError(500, 'INTERNAL_ERROR', 'The download cache is smaller than this file');
      const opening = this.options.store.get(storageKey).catch((error: unknown) => {
        throw error instanceof FileNotFoundInStoreError
          ? new SourceError(objectMissing(), 'not_found', { cause: error })
          : new SourceError(storageFailed(), 'storage_error', { cause: error });
      });
      // A store that answers only after the stall timeout has its stream closed unread.
      void opening.then((late) => { if (abandoned) late.destroy(); }, () => {});
      source = await Promise.race([opening, stall.expired]);
      const reading = source;

      // Created before streaming and opened 'r+' by the writer (never created by it), so a failure
      // that removes the temp file cannot race a lazy open into leaving one behind.
      await (await open(temp, 'wx', 0o644)).close();
      const hash = createHash('sha256');
      let received = 0;
      const meter = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          stall.touch();
          received += chunk.length;
          if (received > size) return done(new SourceError(storageCorrupt(), 'mismatch'));
          hash.update(chunk);
          done(null, chunk);
        },
      });
      let sourceError: unknown = null;
      reading.once('error', (error) => { sourceError ??= error; });
      // The timer watches the store, not our disk's final flush.
      reading.once('end', () => stall.stop());
      const copying = pipeline(reading, meter, createWriteStream(temp, { flags: 'r+', flush: true })).catch((error: unknown) => {
        if (error instanceof SourceError) throw error;
        if (sourceError !== null) throw new SourceError(storageFailed(), 'storage_error', { cause: sourceError });
        throw error; // our disk: an internal error
      });
      copying.catch(() => {}); // a stalled read may settle long after the race below
      await Promise.race([copying, stall.expired]);
      if (received !== size || hash.digest('hex') !== sha256) throw new SourceError(storageCorrupt(), 'mismatch');

      await this.removals.get(sha256);
      await rename(temp, target);
      this.forget(sha256);
      this.remember(sha256, size);
      await this.evictBeyond(this.options.maxBytes, sha256);
      this.options.onFill?.('filled', object);
      return target;
    } catch (error) {
      abandoned = true;
      source?.destroy();
      await rm(temp, { force: true });
      if (error instanceof SourceError) {
        this.options.onFill?.(error.outcome, object, error.cause ?? error);
        throw error.response;
      }
      this.options.onFill?.('failed', object, error);
      throw error;
    } finally {
      stall.stop();
    }
  }
}
