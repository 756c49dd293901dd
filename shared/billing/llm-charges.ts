import type { LlmUsage } from '../llm-providers/llm-client.js';
import type { Database } from '../db/client.js';
import { newId } from '../ids.js';
import { addApiKeyUsage, findRunPayer, insertCreditTransactionOnce } from './llm-charges-repository.js';
import { addToCreditBalance } from './repository.js';

export interface LlmCharge {
  runId: string;
  blockId: string;
  /** What was priced. Not stored (the ledger has no column for it); kept so the caller can log the whole charge. */
  model: string;
  usage: LlmUsage;
  /** From `llmTokenCostMilli`; the caller prices, this function only books. */
  costMilli: number;
}

/** The ledger reference of an `llm` block's charge: one per block of a run (a block runs once per run). */
export const llmChargeReference = (runId: string, blockId: string) => `llm:${runId}:${blockId}`;

/**
 * Books the token cost of one `llm` block against the team that pays for the run (`runs.team_id`)
 * and the run's API key, in one transaction. Idempotent: the ledger row's reference is unique per
 * team, so an activity retried after it already charged inserts nothing and changes nothing — the
 * balance and the key move only together with a newly inserted row. Post-paid: the block has
 * already run, so the balance may go below zero; the next run is then refused by admitRun's check (run-service.ts).
 * Returns whether this call charged.
 */
export async function chargeLlmTokens(db: Database, charge: LlmCharge): Promise<{ charged: boolean }> {
  if (!Number.isSafeInteger(charge.costMilli) || charge.costMilli < 0) {
    throw new RangeError(`costMilli must be a non-negative integer, got ${charge.costMilli}`);
  }
  // A free block leaves no trace: a zero-amount ledger row would only be noise.
  if (charge.costMilli === 0) return { charged: false };
  return db.transaction().execute(async (trx) => {
    const run = await findRunPayer(trx, charge.runId);
    if (!run) throw new Error(`run ${charge.runId} does not exist`);
    const inserted = await insertCreditTransactionOnce(trx, {
      id: newId(), team_id: run.team_id, amount_milli: -charge.costMilli, reason: 'llm_tokens',
      reference: llmChargeReference(charge.runId, charge.blockId), created_by: null,
    });
    if (!inserted) return { charged: false };
    await addToCreditBalance(trx, run.team_id, -charge.costMilli);
    if (run.api_key_id) {
      // Not last_used_at: the key was used when the run started, not now.
      await addApiKeyUsage(trx, run.api_key_id, charge.costMilli);
    }
    return { charged: true };
  });
}
