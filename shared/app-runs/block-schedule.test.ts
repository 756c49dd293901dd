import { describe, expect, it } from 'vitest';
import type { Graph } from '../documents/graph.js';
import { initialWalkState, takeReadyBlocks, type WalkState } from './block-schedule.js';

const block = (id: string, type: Graph['blocks'][number]['type'] = 'template') => ({ id, type, name: '', config: {} });
const ids = (blocks: { id: string }[]) => blocks.map((b) => b.id);

function complete(state: WalkState, id: string, output: unknown = null) {
  state.status.set(id, 'completed');
  state.outputs.set(id, output);
}

describe('readiness', () => {
  it('starts blocks without incoming edges at once, and runs siblings together', () => {
    const graph: Graph = {
      blocks: [block('a'), block('b'), block('left'), block('right'), block('join')],
      edges: [{ from: 'a', to: 'left' }, { from: 'a', to: 'right' }, { from: 'b', to: 'join' }, { from: 'left', to: 'join' }, { from: 'right', to: 'join' }],
    };
    const state = initialWalkState(graph);
    expect(ids(takeReadyBlocks(graph, state))).toEqual(['a', 'b']);
    complete(state, 'a');
    state.status.set('b', 'running');
    expect(ids(takeReadyBlocks(graph, state))).toEqual(['left', 'right']);
    complete(state, 'left');
    state.status.set('right', 'running');
    complete(state, 'b');
    expect(ids(takeReadyBlocks(graph, state))).toEqual([]);
    complete(state, 'right');
    expect(ids(takeReadyBlocks(graph, state))).toEqual(['join']);
  });
});

describe('condition routing', () => {
  const graph: Graph = {
    blocks: [block('c', 'condition'), block('yes'), block('no'), block('afterNo'), block('afterNo2'), block('merge')],
    edges: [
      { from: 'c', to: 'yes', when: true }, { from: 'c', to: 'no', when: false },
      { from: 'no', to: 'afterNo' }, { from: 'afterNo', to: 'afterNo2' },
      { from: 'yes', to: 'merge' }, { from: 'afterNo2', to: 'merge' },
    ],
  };

  it('takes only the edge whose `when` equals the output and skips the other branch, transitively', () => {
    const state = initialWalkState(graph);
    expect(ids(takeReadyBlocks(graph, state))).toEqual(['c']);
    complete(state, 'c', true);
    expect(ids(takeReadyBlocks(graph, state))).toEqual(['yes']);
    expect(['no', 'afterNo', 'afterNo2'].map((id) => state.status.get(id))).toEqual(['skipped', 'skipped', 'skipped']);
    expect(state.status.get('merge')).toBe('pending');
    complete(state, 'yes');
    // A block with one taken incoming edge runs even though its other predecessor was skipped.
    expect(ids(takeReadyBlocks(graph, state))).toEqual(['merge']);
  });

  it('skips everything downstream when no incoming edge is taken', () => {
    const only: Graph = { blocks: [block('c', 'condition'), block('yes'), block('after')], edges: [{ from: 'c', to: 'yes', when: true }, { from: 'yes', to: 'after' }] };
    const state = initialWalkState(only);
    takeReadyBlocks(only, state);
    complete(state, 'c', false);
    expect(ids(takeReadyBlocks(only, state))).toEqual([]);
    expect(state.status.get('yes')).toBe('skipped');
    expect(state.status.get('after')).toBe('skipped');
  });
});
