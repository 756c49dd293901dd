import { describe, expect, it } from 'vitest';
import { coerceQueryInputs, mapFields, matchEndpoint, releaseEndpointsSchema, type ReleaseMethod } from './router.js';

const endpoints: Array<{ method: ReleaseMethod; path: string }> = [
  { method: 'POST', path: '/greet/:name' },
  { method: 'GET', path: '/users/:id' },
  { method: 'GET', path: '/users/me' },
  { method: 'GET', path: '/' },
  { method: 'DELETE', path: '/a/:x/b/:y' },
];

describe('matchEndpoint', () => {
  it('matches literal segments and binds :params', () => {
    expect(matchEndpoint(endpoints, 'POST', '/greet/ada')).toEqual({ endpoint: endpoints[0], params: { name: 'ada' } });
    expect(matchEndpoint(endpoints, 'DELETE', '/a/1/b/2')?.params).toEqual({ x: '1', y: '2' });
    expect(matchEndpoint(endpoints, 'GET', '/')?.endpoint).toBe(endpoints[3]);
  });

  it('prefers a literal segment over a parameter, whatever the order of the tree', () => {
    expect(matchEndpoint(endpoints, 'GET', '/users/me')?.endpoint).toBe(endpoints[2]);
    expect(matchEndpoint(endpoints, 'GET', '/users/42')).toEqual({ endpoint: endpoints[1], params: { id: '42' } });
  });

  it.each([
    ['a trailing segment', 'POST', '/greet/ada/extra'],
    ['a missing parameter', 'POST', '/greet'],
    ['a trailing slash', 'POST', '/greet/ada/'],
    ['an empty parameter', 'POST', '/greet/'],
    ['a different parameter count', 'DELETE', '/a/1/b'],
    ['a different literal', 'DELETE', '/a/1/c/2'],
    ['the wrong method', 'GET', '/greet/ada'],
    ['a method outside the tree', 'HEAD', '/users/me'],
  ])('does not match %s', (_label, method, path) => {
    expect(matchEndpoint(endpoints, method, path)).toBeNull();
  });
});

describe('mapFields', () => {
  it('passes every field without a mapping', () => {
    expect(mapFields({ a: 1, b: 2 }, {})).toEqual({ a: 1, b: 2 });
  });
  it('renames mapped fields and drops the rest', () => {
    expect(mapFields({ who: 'Ada', secret: 'x', n: 3 }, { who: 'name', n: 'n' })).toEqual({ name: 'Ada', n: 3 });
  });
  it('leaves out a mapped field the caller did not send', () => {
    expect(mapFields({}, { who: 'name' })).toEqual({});
  });
});

describe('coerceQueryInputs', () => {
  const schema = { inputs: [
    { blockId: 'n', name: 'count', valueType: 'number' as const, required: true },
    { blockId: 'f', name: 'flag', valueType: 'boolean' as const, required: false },
    { blockId: 's', name: 'text', valueType: 'string' as const, required: false },
  ] };
  it('turns number and boolean text into values, by name or block id', () => {
    expect(coerceQueryInputs(schema, { count: '21', flag: 'true', text: '5' })).toEqual({ count: 21, flag: true, text: '5' });
    expect(coerceQueryInputs(schema, { n: '2.5', f: 'false' })).toEqual({ n: 2.5, f: false });
  });
  it('leaves text that is not a number or boolean for validation to refuse', () => {
    expect(coerceQueryInputs(schema, { count: 'abc', flag: 'yes' })).toEqual({ count: 'abc', flag: 'yes' });
    expect(coerceQueryInputs(schema, { count: '' })).toEqual({ count: '' });
  });
});

describe('releaseEndpointsSchema', () => {
  const id = '3f0f6f5e-8a43-4c7b-9d3c-0b9f1e2d3c4a';
  it('accepts a tree, upper-cases methods and fills defaults', () => {
    expect(releaseEndpointsSchema.parse([{ method: 'post', path: '/greet/:name', deploymentId: id }]))
      .toEqual([{ method: 'POST', path: '/greet/:name', deploymentId: id, skipAuth: false, fieldMapping: {} }]);
  });
  it.each([
    ['an unknown method', [{ method: 'TRACE', path: '/x' }]],
    ['a path without /', [{ method: 'GET', path: 'x' }]],
    ['an empty segment', [{ method: 'GET', path: '/a//b' }]],
    ['a trailing slash', [{ method: 'GET', path: '/a/' }]],
    ['a repeated parameter', [{ method: 'GET', path: '/:a/:a' }]],
    ['both deployment and document', [{ method: 'GET', path: '/x', deploymentId: id, documentId: id }]],
    ['two endpoints taking the same requests', [{ method: 'GET', path: '/u/:id' }, { method: 'GET', path: '/u/:name' }]],
  ])('refuses %s', (_label, tree) => {
    expect(releaseEndpointsSchema.safeParse(tree).success).toBe(false);
  });
});
