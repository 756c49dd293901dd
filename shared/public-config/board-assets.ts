import { stat } from 'node:fs/promises';
import { LRUCache } from 'lru-cache';
import type { Config } from '../config.js';
import type { Database } from '../db/client.js';
import type { BoardAssetKind } from '../db/types.js';
import { AppError } from '../errors.js';
import { createObjectStore, FileChangedWhileStoringError, objectKeys, putFileByContent } from '../storage/object-store.js';
import { findBoardAssetSize, findLargestBoardAssetSize, insertBoardAssetIfAbsent } from './repository.js';

// Board firmware and board app installers (docs/public-config.md, spec §4.10, CONTRACTS.md):
// the rules of their download parameters, the registration lookup the download route makes, and
// `asset register`. Storage keys are rebuilt from validated values (objectKeys.boardAsset), never
// taken from a caller.

export type { BoardAssetKind };

export const BOARD_CHANNELS = ['stable', 'beta'] as const;
export const BOARD_PLATFORMS = ['macos-arm64', 'macos-x86_64', 'windows-x86_64'] as const;
export type BoardChannel = (typeof BOARD_CHANNELS)[number];
export type BoardPlatform = (typeof BOARD_PLATFORMS)[number];

/** Extensions by target, case-sensitive: firmware `.bin`, macOS `.dmg`/`.pkg`/`.zip`, Windows `.exe`/`.msi`. */
const EXTENSIONS: Record<BoardChannel | BoardPlatform, readonly string[]> = {
  stable: ['.bin'],
  beta: ['.bin'],
  'macos-arm64': ['.dmg', '.pkg', '.zip'],
  'macos-x86_64': ['.dmg', '.pkg', '.zip'],
  'windows-x86_64': ['.exe', '.msi'],
};

/** `Content-Type` by extension. */
export const BOARD_ASSET_CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.bin': 'application/octet-stream',
  '.dmg': 'application/x-apple-diskimage',
  '.pkg': 'application/octet-stream',
  '.zip': 'application/zip',
  '.exe': 'application/vnd.microsoft.portable-executable',
  '.msi': 'application/x-msi',
};

export const SHA256_HEX = /^[0-9a-f]{64}$/;

// Letters, digits, `.`, `_`, `+`, `-`, starting with a letter or digit: safe in a URL path and inside
// the quotes of `Content-Disposition` as they are, and never a path of its own.
const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._+-]*$/;
export const MAX_FILE_NAME_LENGTH = 200;

/** The targets (channels or platforms) of a kind. */
export const boardTargets = (kind: BoardAssetKind): readonly string[] => (kind === 'board-firmware' ? BOARD_CHANNELS : BOARD_PLATFORMS);

const isTarget = (kind: BoardAssetKind, target: string): target is BoardChannel | BoardPlatform => boardTargets(kind).includes(target);

/** Why `fileName` cannot be a download name of (kind, target), or null when it can. */
export function boardFileNameProblem(kind: BoardAssetKind, target: string, fileName: string): string | null {
  if (!isTarget(kind, target)) return `unknown ${kind === 'board-firmware' ? 'channel' : 'platform'} ${JSON.stringify(target)}`;
  if (fileName.length === 0 || fileName.length > MAX_FILE_NAME_LENGTH) return `must be 1 to ${MAX_FILE_NAME_LENGTH} characters`;
  if (!FILE_NAME.test(fileName) || fileName.includes('..')) {
    return 'may hold only letters, digits, ".", "_", "+" and "-", must start with a letter or digit, and may not contain ".."';
  }
  const extensions = EXTENSIONS[target];
  if (!extensions.some((extension) => fileName.endsWith(extension))) {
    const what = kind === 'board-firmware' ? 'board firmware' : `a ${target} app`;
    return `${what} must end in ${extensions.join(', ')} (case-sensitive)`;
  }
  return null;
}

/** The `Content-Type` of a name that passed `boardFileNameProblem`. */
export const boardAssetContentType = (fileName: string): string =>
  BOARD_ASSET_CONTENT_TYPES[fileName.slice(fileName.lastIndexOf('.'))] ?? 'application/octet-stream';

/** The public download path: `/public/board/firmware/<channel>/<sha256>/<name>` or `/public/board/app/<platform>/<sha256>/<name>`. */
export const boardAssetPath = (kind: BoardAssetKind, target: string, sha256: string, fileName: string): string =>
  `/public/board/${kind === 'board-firmware' ? 'firmware' : 'app'}/${target}/${sha256}/${fileName}`;

/** One download as a request names it (already validated). */
export interface BoardAssetRef { kind: BoardAssetKind; target: string; sha256: string; fileName: string }
/** A registered asset: the ref, its size, and where the object store keeps its bytes. */
export interface BoardAsset extends BoardAssetRef { size: number; storageKey: string }

// --- lookups ---

export async function findBoardAsset(db: Database, ref: BoardAssetRef): Promise<BoardAsset | null> {
  const row = await findBoardAssetSize(db, { kind: ref.kind, target: ref.target, sha256: ref.sha256, file_name: ref.fileName });
  return row ? { ...ref, size: row.size, storageKey: objectKeys.boardAsset(ref.kind, ref.target, ref.sha256) } : null;
}

/** The size of the largest registered asset (0 with none): the download cache must hold it. */
export async function largestBoardAssetSize(db: Database): Promise<number> {
  const row = await findLargestBoardAssetSize(db);
  return Number(row?.largest ?? 0);
}

/**
 * The registration lookup of the download route: registrations are never changed or removed
 * (registering the same bytes again is a no-op), so a found one is remembered and repeat downloads
 * cost no query. Unknown refs are asked every time, so a new registration is served at once.
 */
export function createBoardAssetLookup(db: Database, options: { maxEntries?: number } = {}): (ref: BoardAssetRef) => Promise<BoardAsset | null> {
  const known = new LRUCache<string, BoardAsset>({ max: options.maxEntries ?? 1024 });
  return async (ref) => {
    const id = `${ref.kind}/${ref.target}/${ref.sha256}/${ref.fileName}`;
    const hit = known.get(id);
    if (hit) return hit;
    const found = await findBoardAsset(db, ref);
    if (found) known.set(id, found);
    return found;
  };
}

// --- start-up check ---

/**
 * Why `DOWNLOAD_CACHE_MAX_BYTES` cannot serve every asset, or null when it can: the cache must hold
 * anything the upload limit lets in and the largest registered asset (`largestAsset`; null when it
 * could not be learnt). The API refuses to start on a problem (spec §8.2).
 */
export function downloadCacheSizeProblem(config: Pick<Config, 'DOWNLOAD_CACHE_MAX_BYTES' | 'STORAGE_MAX_UPLOAD_BYTES'>, largestAsset: number | null): string | null {
  const cache = config.DOWNLOAD_CACHE_MAX_BYTES;
  if (cache < config.STORAGE_MAX_UPLOAD_BYTES) {
    return `DOWNLOAD_CACHE_MAX_BYTES (${cache}) must be at least STORAGE_MAX_UPLOAD_BYTES (${config.STORAGE_MAX_UPLOAD_BYTES})`;
  }
  if (largestAsset !== null && cache < largestAsset) {
    return `DOWNLOAD_CACHE_MAX_BYTES (${cache}) must be at least the largest registered board asset (${largestAsset} bytes)`;
  }
  return null;
}

// --- registration (`asset register`) ---

const invalidAsset = (message: string) => new AppError(400, 'invalid_asset', message);

/**
 * Stores the file in the object store under `objectKeys.boardAsset(kind, target, sha256)` and
 * registers it (idempotent for the same bytes and name). Refuses a file larger than
 * `DOWNLOAD_CACHE_MAX_BYTES`: the next start of the API would refuse it.
 */
export async function registerBoardAsset(
  ctx: { db: Database; config: Config },
  input: { kind: BoardAssetKind; target: string; filePath: string; fileName: string },
): Promise<{ sha256: string; size: number; path: string }> {
  const { kind, target, filePath, fileName } = input;
  if (kind !== 'board-firmware' && kind !== 'board-app') throw invalidAsset(`unknown kind ${JSON.stringify(kind)}`);
  const problem = boardFileNameProblem(kind, target, fileName);
  if (problem) throw invalidAsset(`file name: ${problem}`);
  const info = await stat(filePath);
  if (!info.isFile()) throw invalidAsset(`${filePath} is not a file`);
  const limit = ctx.config.DOWNLOAD_CACHE_MAX_BYTES;
  if (info.size > limit) {
    throw new AppError(400, 'asset_too_large', `The file has ${info.size} bytes; the download cache holds at most ${limit} (DOWNLOAD_CACHE_MAX_BYTES)`);
  }

  let stored: { sha256: string; size: number };
  try {
    stored = await putFileByContent(createObjectStore(ctx.config), (sha256) => objectKeys.boardAsset(kind, target, sha256), filePath);
  } catch (error) {
    if (error instanceof FileChangedWhileStoringError) throw invalidAsset(error.message);
    throw error;
  }
  const { sha256 } = stored;
  await insertBoardAssetIfAbsent(ctx.db, { kind, target, sha256, file_name: fileName, size: stored.size });
  return { sha256, size: stored.size, path: boardAssetPath(kind, target, sha256, fileName) };
}
