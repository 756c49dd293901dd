import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileNotFoundInStoreError, isValidStorageKey, LocalFileStore, storageKeyForFile } from './file-store.js';
import { cleanOriginalName, normalizeContentType } from './service.js';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const drain = async (r: Readable) => { const c: Buffer[] = []; for await (const x of r) c.push(x as Buffer); return Buffer.concat(c); };

describe('LocalFileStore', () => {
  let root: string;
  let store: LocalFileStore;
  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'wf-store-'));
    store = new LocalFileStore(root);
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  it('puts, gets and deletes an object, reporting size and sha256', async () => {
    const bytes = Buffer.from('hello, store');
    const key = storageKeyForFile('AB12cdef-0000-4000-8000-000000000000');
    expect(key).toBe('ab/ab12cdef-0000-4000-8000-000000000000');
    expect(await store.put(key, Readable.from([bytes.subarray(0, 5), bytes.subarray(5)]))).toEqual({ size: bytes.length, sha256: sha(bytes) });
    expect(await readFile(path.join(root, 'ab', 'ab12cdef-0000-4000-8000-000000000000'))).toEqual(bytes);
    expect(await drain(await store.get(key))).toEqual(bytes);
    expect(await readdir(path.join(root, '.tmp'))).toEqual([]);
    await store.delete(key);
    await expect(store.get(key)).rejects.toBeInstanceOf(FileNotFoundInStoreError);
    await store.delete(key); // deleting twice is fine
  });

  it('leaves nothing behind when the source stream fails', async () => {
    const failing = new Readable({ read() { this.push(Buffer.alloc(1024)); this.destroy(new Error('client went away')); } });
    await expect(store.put('zz/failed', failing)).rejects.toThrow('client went away');
    await expect(store.get('zz/failed')).rejects.toBeInstanceOf(FileNotFoundInStoreError);
    expect(await readdir(path.join(root, '.tmp'))).toEqual([]);
  });

  it('refuses keys that could leave the root', async () => {
    for (const key of ['../x', 'a/../../x', '/etc/passwd', 'a//b', '.tmp/x', 'A/b', 'a\\b', '', 'a/', 'a.b']) {
      expect(isValidStorageKey(key), key).toBe(false);
      await expect(store.put(key, Readable.from([Buffer.from('x')]))).rejects.toThrow('invalid storage key');
    }
  });
});

describe('upload metadata cleaning', () => {
  it('keeps only the last path segment of a client file name, without control characters', () => {
    expect(cleanOriginalName('../../etc/passwd')).toBe('passwd');
    expect(cleanOriginalName('C:\\Users\\me\\report.pdf')).toBe('report.pdf');
    expect(cleanOriginalName('a\u0000b\nc.txt')).toBe('abc.txt');
    expect(cleanOriginalName('..')).toBeNull();
    expect(cleanOriginalName(undefined)).toBeNull();
    expect(cleanOriginalName('x'.repeat(300))).toHaveLength(255);
  });

  it('normalizes the content type', () => {
    expect(normalizeContentType('Application/PDF; charset=binary')).toBe('application/pdf');
    expect(normalizeContentType(undefined)).toBe('application/octet-stream');
    expect(normalizeContentType('not a type')).toBe('application/octet-stream');
    expect(normalizeContentType('text/plain\r\nX-Evil: 1')).toBe('application/octet-stream');
  });
});
