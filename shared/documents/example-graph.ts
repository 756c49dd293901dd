import type { Graph } from './graph.js';

/** The CONTRACTS.md example (input → transform → output): the demo app of `npm start` and of tests. */
export const exampleGraph: Graph = {
  blocks: [
    { id: 'q', type: 'input', name: 'name', config: { valueType: 'string', required: true } },
    { id: 'n', type: 'input', name: 'n', config: { valueType: 'number', required: false, default: 1 } },
    { id: 'x', type: 'transform', name: 'shape', config: { expression: "{ 'greeting': 'hello ' & $q, 'n': $n * 2 }" } },
    { id: 'o', type: 'output', name: 'result', config: { value: '{{x}}' } },
  ],
  edges: [{ from: 'q', to: 'x' }, { from: 'n', to: 'x' }, { from: 'x', to: 'o' }],
};
