import path from 'node:path';
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
