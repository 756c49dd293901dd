import type { Block, Edge, Graph } from '../documents/graph.js';

// Which blocks may run next. Pure: the workflow asks after every block that settles.

export type BlockState = 'pending' | 'running' | 'completed' | 'skipped' | 'failed';

export interface WalkState {
  status: Map<string, BlockState>;
  outputs: Map<string, unknown>;
}

export function initialWalkState(graph: Graph): WalkState {
  return { status: new Map(graph.blocks.map((b) => [b.id, 'pending' as const])), outputs: new Map() };
}

/**
 * An edge is taken when its source completed and, for an edge carrying `when` out of a condition,
 * the condition's boolean output equals `when`.
 */
export function isEdgeTaken(edge: Edge, graph: Graph, state: WalkState): boolean {
  if (state.status.get(edge.from) !== 'completed') return false;
  if (edge.when === undefined) return true;
  const source = graph.blocks.find((b) => b.id === edge.from);
  return source?.type !== 'condition' || state.outputs.get(edge.from) === edge.when;
}

/**
 * Marks every pending block whose predecessors have all settled: skipped when none of its incoming
 * edges is taken (repeated, so skipping propagates), otherwise returned as ready to run, in graph
 * order. Blocks without incoming edges are ready at once. Does not mark the ready blocks running.
 */
export function takeReadyBlocks(graph: Graph, state: WalkState): Block[] {
  const incoming = new Map<string, Edge[]>();
  for (const edge of graph.edges) incoming.set(edge.to, [...(incoming.get(edge.to) ?? []), edge]);
  for (;;) {
    const ready: Block[] = [];
    let skippedAny = false;
    for (const block of graph.blocks) {
      if (state.status.get(block.id) !== 'pending') continue;
      const edges = incoming.get(block.id) ?? [];
      const settled = edges.every((e) => {
        const s = state.status.get(e.from);
        return s === 'completed' || s === 'skipped';
      });
      if (!settled) continue;
      if (edges.length === 0 || edges.some((e) => isEdgeTaken(e, graph, state))) ready.push(block);
      else {
        state.status.set(block.id, 'skipped');
        skippedAny = true;
      }
    }
    // A skip can settle another block's last predecessor: look again until nothing changes.
    if (!skippedAny) return ready;
  }
}
