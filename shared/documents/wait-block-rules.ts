import { fieldsSchemaProblem } from './approval-fields-schema.js';
import { isTemplateText, waitDuration } from './wait-rules.js';
import type { Graph, GraphProblem } from './graph-schema.js';

// The checks of `wait` and `approval` blocks that need the site settings and the clock, made when a
// graph is saved or published (CONTRACTS.md "Long runs": refused with the block id, not at run time).
// Templates are checked by the run workflow once rendered.

export interface WaitLimits { maxWaitSeconds: number; nowMs: number }

export function waitBlockProblems(graph: Graph, limits: WaitLimits): GraphProblem[] {
  const problems: GraphProblem[] = [];
  for (const block of graph.blocks) {
    const c = block.config as Record<string, unknown>;
    if (block.type === 'wait') {
      const literal = (v: unknown) => v !== undefined && !(typeof v === 'string' && isTemplateText(v));
      if (!literal(c.seconds) && !literal(c.until)) continue;
      const duration = waitDuration(c, limits.nowMs, limits.maxWaitSeconds);
      if ('kind' in duration) problems.push({ blockId: block.id, message: `config: ${duration.message}` });
      else if (c.until !== undefined && duration.seconds === 0) problems.push({ blockId: block.id, message: `config.until: '${String(c.until)}' is in the past` });
    }
    if (block.type === 'approval') {
      if (typeof c.timeoutSeconds === 'number' && c.timeoutSeconds > limits.maxWaitSeconds) {
        problems.push({ blockId: block.id, message: `config.timeoutSeconds: ${c.timeoutSeconds} is over the cap of ${limits.maxWaitSeconds} (runs.max_wait_seconds)` });
      }
      if (c.fields !== undefined && c.fields !== null && typeof c.fields === 'object' && !Array.isArray(c.fields)) {
        const problem = fieldsSchemaProblem(c.fields as Record<string, unknown>);
        if (problem) problems.push({ blockId: block.id, message: `config.${problem}` });
      }
    }
  }
  return problems;
}
