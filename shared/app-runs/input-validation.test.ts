import { describe, expect, it } from 'vitest';
import { validateRunInputs, withTrigger } from './input-validation.js';

const schema = {
  inputs: [
    { blockId: 'q', name: 'name', valueType: 'string' as const, required: true },
    { blockId: 'n', name: 'n', valueType: 'number' as const, required: false, default: 1 },
    { blockId: 'd', name: 'doc', valueType: 'pdf' as const, required: true, default: undefined },
  ],
};

describe('run input validation', () => {
  it('accepts inputs by name or by block id, and ignores unknown keys', () => {
    expect(validateRunInputs(schema, { name: 'Ada', doc: { _type: 'pdf', value: 'storage://f1' }, extra: 1 })).toEqual([]);
    expect(validateRunInputs(schema, { q: 'Ada', d: 'plain text' })).toEqual([]);
  });
  it('lists each missing required or mistyped field', () => {
    expect(validateRunInputs(schema, { n: 'two', doc: { _type: 'image', value: 'x' } })).toEqual([
      { field: 'inputs.name', message: 'is required' },
      { field: 'inputs.n', message: 'expected a number' },
      { field: 'inputs.doc', message: "expected { _type: 'pdf', value: <file handle, data: URI or base64> }" },
    ]);
  });
  it('overwrites a caller-supplied _trigger', () => {
    const result = withTrigger({ _trigger: { source: 'forged' }, a: 1 }, { source: 'api' }, new Date('2026-01-01T00:00:00Z'));
    expect(result).toEqual({ a: 1, _trigger: { source: 'api', triggered_at: '2026-01-01T00:00:00.000Z' } });
  });
});
