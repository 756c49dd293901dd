import { ApplicationFailure } from '@temporalio/common';
import type { Database } from '../../shared/db/client.js';
import { ACTIVITY_JSONATA_GUARD, BlockFailure, errorMessage, evaluateBlock, resolveIoBlock, type EvaluationContext, type IoBlockCall } from '../../shared/app-runs/evaluate.js';
import type { ActivityEvaluationInput } from '../../shared/app-runs/contracts.js';
import { resolveClaims, storeClaim } from './claim-store.js';

/**
 * Evaluation of blocks outside workflow code: blocks that read claimed values (docs/app-runs.md
 * "Large payloads"), run on the resolved values so the large values never enter workflow history,
 * and JSONata that needs more steps than workflow code allows, bounded here by JSONata's timeout.
 * The same pure functions as workflow code (shared/app-runs/evaluate.ts). Local activities: their
 * input is not recorded; only the (small, or claimed) result is.
 */
export function createBlockEvaluationActivities({ db }: { db: Database }) {
  return {
    /**
     * A pure block's output, or an I/O block's rendered call (`IoBlockCall`); either is returned as
     * a claim (`output:<blockId>` / `request:<blockId>`) when over the threshold. A block that cannot
     * produce an output fails without retry, with the message the workflow would have reported.
     */
    async evaluateBlockInActivity(input: ActivityEvaluationInput): Promise<unknown> {
      const block = input.graph.blocks.find((b) => b.id === input.blockId);
      if (!block) throw ApplicationFailure.nonRetryable(`block ${input.blockId} is not in the graph`, 'BlockFailure');
      const [inputs, outputs] = await resolveClaims(db, input.runId, [input.inputs, input.outputs] as const);
      const context: EvaluationContext = { graph: input.graph, outputs: new Map(outputs), trigger: input.trigger, jsonataGuard: ACTIVITY_JSONATA_GUARD };
      try {
        if (block.type === 'llm' || block.type === 'http') {
          const call: IoBlockCall = resolveIoBlock(block, context);
          return await storeClaim(db, input.runId, `request:${block.id}`, call);
        }
        return await storeClaim(db, input.runId, `output:${block.id}`, await evaluateBlock(block, context, inputs));
      } catch (error) {
        if (error instanceof BlockFailure) throw ApplicationFailure.nonRetryable(errorMessage(error), 'BlockFailure');
        throw error;
      }
    },

    /** Stores a value that grew large in workflow code; returns it as is when it is small after all. */
    async storeRunPayload(input: { runId: string; key: string; value: unknown }): Promise<unknown> {
      return storeClaim(db, input.runId, input.key, input.value);
    },

  };
}
