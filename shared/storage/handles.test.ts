import { describe, expect, it } from 'vitest';
import { newId } from '../ids.js';
import { formatFileHandle, isFileHandle, parseFileHandle } from './handles.js';

const id = '3f2b8c1e-9a4d-4e5f-8b6a-1c2d3e4f5a6b';

describe('parseFileHandle', () => {
  it('accepts wf-file:<uuid> and storage://<uuid>, returning the id in lowercase', () => {
    expect(parseFileHandle(`wf-file:${id}`)).toBe(id);
    expect(parseFileHandle(`storage://${id}`)).toBe(id);
    expect(parseFileHandle(`wf-file:${id.toUpperCase()}`)).toBe(id);
  });

  it.each([
    ['empty', ''],
    ['a bare id', id],
    ['another scheme', `file:${id}`],
    ['an upper-case scheme', `WF-FILE:${id}`],
    ['storage with one slash', `storage:/${id}`],
    ['wf-file with slashes', `wf-file://${id}`],
    ['leading whitespace', ` wf-file:${id}`],
    ['trailing whitespace', `wf-file:${id} `],
    ['a suffix', `wf-file:${id}/x`],
    ['a path', 'storage://../../etc/passwd'],
    ['not a uuid', 'wf-file:abc'],
    ['an id of word characters', 'wf-file:abc_DEF-123'],
    ['36 characters of hex and dashes that are not a uuid', `wf-file:${'a'.repeat(32)}----`],
    ['a uuid without dashes', `wf-file:${id.replaceAll('-', '')}`],
    ['a query', `storage://${id}?x=1`],
    ['very long', `wf-file:${id}${'a'.repeat(300)}`],
  ])('rejects %s', (_label, text) => {
    expect(parseFileHandle(text)).toBeNull();
    expect(isFileHandle(text)).toBe(false);
  });

  it('rejects values that are not strings', () => {
    for (const value of [null, undefined, 42, { id }, [`wf-file:${id}`]]) expect(parseFileHandle(value)).toBeNull();
  });

  it('accepts the handle of every id the service mints', () => {
    for (let i = 0; i < 20; i++) {
      const fileId = newId();
      expect(parseFileHandle(formatFileHandle(fileId))).toBe(fileId);
      expect(isFileHandle(`storage://${fileId}`)).toBe(true);
    }
  });

  it('formatFileHandle round-trips', () => {
    expect(formatFileHandle(id)).toBe(`wf-file:${id}`);
    expect(parseFileHandle(formatFileHandle(id.toUpperCase()))).toBe(id);
  });
});
