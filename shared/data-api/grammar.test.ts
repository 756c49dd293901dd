import { describe, expect, it } from 'vitest';
import { DataApiError } from './errors.js';
import { parseColumnsParam, parseCondition, parseLogicTree, parseOrder, parseRangeHeader, parseSelect } from './grammar.js';
import { parseAccept, parsePrefer, parseQuery } from './request.js';

const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(DataApiError);
    return error as DataApiError;
  }
  throw new Error('expected a refusal');
};

describe('select', () => {
  it('parses columns, aliases, *, and embeds with alias, hint and !inner, nested', () => {
    expect(parseSelect('')).toEqual([{ kind: 'star' }]);
    expect(parseSelect('id,title:name,*')).toEqual([
      { kind: 'column', name: 'id', alias: null }, { kind: 'column', name: 'name', alias: 'title' }, { kind: 'star' },
    ]);
    expect(parseSelect('id,owner:users!owner_id(id,email),documents!inner(name,deployments(id))')).toEqual([
      { kind: 'column', name: 'id', alias: null },
      { kind: 'embed', relation: 'users', alias: 'owner', hint: 'owner_id', inner: false, select: [{ kind: 'column', name: 'id', alias: null }, { kind: 'column', name: 'email', alias: null }] },
      { kind: 'embed', relation: 'documents', alias: null, hint: null, inner: true, select: [
        { kind: 'column', name: 'name', alias: null },
        { kind: 'embed', relation: 'deployments', alias: null, hint: null, inner: false, select: [{ kind: 'column', name: 'id', alias: null }] },
      ] },
    ]);
    expect(parseSelect('p:projects!documents_project_id_fkey!inner(*)')[0]).toMatchObject({ hint: 'documents_project_id_fkey', inner: true });
  });

  it('refuses SQL, quotes, casts, JSON paths, spreads, aggregates and broken syntax with a 400', () => {
    for (const text of ['*,pg_sleep(1)', 'id;drop', '"id"', 'id,"name; drop table x"', 'id::text', 'data->a', 'data->>a', '...documents(id)',
      'documents()', 'count()', 'id,', ',id', 'documents(id', 'documents(id))', 'a b', 'id,name)', 'x!y', '1abc', 'owner:', 'a:b:c']) {
      const error = refusal(() => parseSelect(text));
      expect(error.status, text).toBe(400);
    }
    expect(refusal(() => parseSelect('*,pg_sleep(1)')).message).toMatch(/"1" is not a valid name/);
    expect(refusal(() => parseSelect('"id"')).message).toMatch(/quoted identifier/);
  });

  it('refuses embeds nested deeper than 8 levels', () => {
    const deep = `${'a('.repeat(10)}id${')'.repeat(10)}`;
    expect(refusal(() => parseSelect(deep)).message).toMatch(/deeper/);
  });
});

describe('filters', () => {
  it('parses every supported operator, not., and in-lists with quotes', () => {
    expect(parseCondition('name', 'eq.a.b')).toEqual({ kind: 'condition', column: 'name', negated: false, operator: 'eq', value: 'a.b' });
    expect(parseCondition('n', 'not.gte.5')).toMatchObject({ negated: true, operator: 'gte', value: '5' });
    for (const op of ['neq', 'gt', 'lt', 'lte', 'like', 'ilike', 'match', 'imatch', 'isdistinct', 'cs', 'cd', 'ov']) {
      expect(parseCondition('c', `${op}.x`)).toMatchObject({ operator: op, value: 'x' });
    }
    expect(parseCondition('c', 'is.NULL')).toMatchObject({ operator: 'is', value: 'null' });
    expect(parseCondition('c', 'in.(a,"b,c",d)')).toMatchObject({ operator: 'in', value: ['a', 'b,c', 'd'] });
    expect(parseCondition('c', 'in.()')).toMatchObject({ value: [] });
    expect(parseCondition('c', 'cs.{a,b}')).toMatchObject({ value: '{a,b}' });
  });

  it('refuses unknown and unsupported operators, bad is-values, and names that are not identifiers', () => {
    expect(refusal(() => parseCondition('c', 'fts.word')).message).toMatch(/Unsupported.*fts/);
    expect(refusal(() => parseCondition('c', 'like(any).{a*}')).message).toMatch(/Unsupported/);
    expect(refusal(() => parseCondition('c', 'sleep.1')).message).toMatch(/Unknown filter operator/);
    expect(refusal(() => parseCondition('c', 'eq')).message).toMatch(/no value/);
    expect(refusal(() => parseCondition('c', 'is.maybe')).status).toBe(400);
    expect(refusal(() => parseCondition('c', 'in.a,b')).status).toBe(400);
    expect(refusal(() => parseCondition('c;drop', 'eq.1')).status).toBe(400);
    expect(refusal(() => parseCondition('"c"', 'eq.1')).message).toMatch(/quoted identifier/);
  });

  it('parses or/and trees with nesting, negation and quoted values', () => {
    expect(parseLogicTree('or', false, '(a.eq.1,and(b.gt.2,c.not.is.null),not.or(d.in.(1,2),e.eq."x,y"))')).toEqual({
      kind: 'logic', operator: 'or', negated: false, children: [
        { kind: 'condition', column: 'a', negated: false, operator: 'eq', value: '1' },
        { kind: 'logic', operator: 'and', negated: false, children: [
          { kind: 'condition', column: 'b', negated: false, operator: 'gt', value: '2' },
          { kind: 'condition', column: 'c', negated: true, operator: 'is', value: 'null' },
        ] },
        { kind: 'logic', operator: 'or', negated: true, children: [
          { kind: 'condition', column: 'd', negated: false, operator: 'in', value: ['1', '2'] },
          { kind: 'condition', column: 'e', negated: false, operator: 'eq', value: 'x,y' },
        ] },
      ],
    });
    for (const text of ['a.eq.1', '(a.eq.1', '(a)', '()', '(a.eq.1,"b)', '(pg_sleep(1))', '(a;b.eq.1)']) {
      expect(refusal(() => parseLogicTree('or', false, text)).status, text).toBe(400);
    }
  });
});

describe('order, range, columns', () => {
  it('parses order terms and refuses anything else', () => {
    expect(parseOrder('a,b.desc,c.asc.nullsfirst,d.nullslast')).toEqual([
      { column: 'a', descending: false, nulls: null }, { column: 'b', descending: true, nulls: null },
      { column: 'c', descending: false, nulls: 'first' }, { column: 'd', descending: false, nulls: 'last' },
    ]);
    for (const text of ['id;drop', 'id.desc;select', 'id.sideways', 'documents(name).desc', '"id"', 'random()']) {
      expect(refusal(() => parseOrder(text)).status, text).toBe(400);
    }
  });

  it('parses Range and refuses one that ends before it starts (416)', () => {
    expect(parseRangeHeader('0-9')).toEqual({ offset: 0, limit: 10 });
    expect(parseRangeHeader('5-')).toEqual({ offset: 5, limit: null });
    expect(refusal(() => parseRangeHeader('9-3')).status).toBe(416);
    expect(refusal(() => parseRangeHeader('items=0-9')).status).toBe(400);
  });

  it('reads the columns parameter as supabase-js quotes it', () => {
    expect(parseColumnsParam('"provider","model"')).toEqual(['provider', 'model']);
    expect(refusal(() => parseColumnsParam('"a;b"')).status).toBe(400);
  });
});

describe('request', () => {
  it('sorts query parameters into levels: root and embed paths', () => {
    const parts = parseQuery(new URLSearchParams('select=id,docs:documents(id)&name=eq.x&docs.name=like.a*&docs.order=name.desc&docs.limit=2&or=(a.eq.1,b.eq.2)&limit=5&offset=10&order=id'), { filtersAllowed: true });
    expect(parts.modifiers.get('')).toMatchObject({ limit: 5, offset: 10, order: [{ column: 'id' }], filters: [{ column: 'name' }, { kind: 'logic', operator: 'or' }] });
    expect(parts.modifiers.get('docs')).toMatchObject({ limit: 2, order: [{ column: 'name', descending: true }], filters: [{ column: 'name', operator: 'like' }] });
    expect(refusal(() => parseQuery(new URLSearchParams('limit=1&limit=2'), { filtersAllowed: true })).status).toBe(400);
    expect(refusal(() => parseQuery(new URLSearchParams('limit=-1'), { filtersAllowed: true })).status).toBe(400);
  });

  it('reads Prefer as supabase-js appends it, refusing what it does not do', () => {
    expect(parsePrefer({ prefer: 'return=representation, count=exact, resolution=merge-duplicates' })).toEqual({ representation: true, count: true, resolution: 'merge', missingDefault: false });
    expect(parsePrefer({ prefer: 'resolution=ignore-duplicates,missing=default' })).toMatchObject({ resolution: 'ignore', missingDefault: true });
    expect(refusal(() => parsePrefer({ prefer: 'tx=rollback' })).status).toBe(400);
    expect(parsePrefer({ prefer: 'whatever=1' })).toMatchObject({ representation: false });
    expect(refusal(() => parsePrefer({ prefer: 'handling=strict, whatever=1' })).code).toBe('PGRST122');
  });

  it('reads Accept: JSON arrays, one object, or 406', () => {
    expect(parseAccept({})).toEqual({ single: false });
    expect(parseAccept({ accept: 'application/json, text/plain, */*' })).toEqual({ single: false });
    expect(parseAccept({ accept: 'application/vnd.pgrst.object+json' })).toEqual({ single: true });
    expect(refusal(() => parseAccept({ accept: 'text/csv' })).status).toBe(406);
    expect(refusal(() => parseAccept({ accept: 'application/vnd.pgrst.array+json;nulls=stripped' })).status).toBe(406);
  });
});
