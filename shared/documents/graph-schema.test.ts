import { describe, expect, it } from 'vitest';
import { parseRunnableGraph } from './graph-schema.js';

describe('parseRunnableGraph: the run plan reads configs the workflow can use as they are', () => {
  it('fills config defaults', () => {
    const graph = parseRunnableGraph({ blocks: [{ id: 'q', type: 'input', config: { valueType: 'string' } }] });
    expect(graph?.blocks[0]).toEqual({ id: 'q', type: 'input', name: '', config: { valueType: 'string', required: false } });
    expect(graph?.edges).toEqual([]);
  });

  it('refuses a snapshot with an invalid block config or an invalid shape', () => {
    expect(parseRunnableGraph({ blocks: [{ id: 't', type: 'transform', config: {} }] })).toBeNull();
    expect(parseRunnableGraph({ blocks: [{ id: 'l', type: 'llm', config: { prompt: 'x' } }] })).toBeNull();
    expect(parseRunnableGraph({ blocks: 'nope' })).toBeNull();
  });
});
