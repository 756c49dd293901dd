// The storage capability's public surface (the run engine reads file handles through here).
export { createFileStore, FileNotFoundInStoreError, LocalFileStore, isValidStorageKey, storageKeyForFile, type ByteSpan, type FileStore, type StoredObject } from './file-store.js';
export { createObjectStore, objectKeys, objectStoreDir, type BoardAssetKind } from './object-store.js';
export { FILE_HANDLE_PREFIX, STORAGE_URL_PREFIX, formatFileHandle, isFileHandle, parseFileHandle } from './handles.js';
export { readFile, readFileBuffer, type OpenedFile, type StorageCaller, type UploadedFile } from './service.js';
