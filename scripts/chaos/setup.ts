// What the drivers run: an app whose `llm` block streams from our fake model server for a couple
// of seconds (so kills land while runs are in flight), published into the demo team, which gets
// enough credits that no run is ever refused for money (a 402 would hide what we measure).
import { graphSchema, validateGraph, type Graph } from '../../shared/documents/graph-schema.js';
import { grantCredits } from '../../shared/billing/service.js';
import type { Database } from '../../shared/db/client.js';
import { findLiveBillingRules } from '../../shared/billing/billing-rules-repository.js';
import { publishDirect } from '../../test/harness/apps.js';

const CREDITS_MILLI = 1_000_000_000;
const DEFAULT_RUN_BASE_MILLI = 10;

/**
 * input `tag` → llm → output. Every request sends its own `tag`, so a run row can be traced back
 * to the request that made it even when the answer carried no run id (a 503).
 */
export const chaosGraph: Graph = graphSchema.parse({
  blocks: [
    { id: 'tag', type: 'input', name: 'tag', config: { valueType: 'string', required: true } },
    { id: 'ask', type: 'llm', name: 'ask', config: { model: 'chaos-model', prompt: 'Say something about {{tag}}' } },
    { id: 'o', type: 'output', name: 'o', config: { value: '{{ask.text}}' } },
  ],
  edges: [{ from: 'tag', to: 'ask' }, { from: 'ask', to: 'o' }],
});

export interface ChaosApp { deploymentId: string; runBaseMilli: number }

export async function prepareChaosApp(db: Database, teamId: string): Promise<ChaosApp> {
  const problems = validateGraph(chaosGraph);
  if (problems.length) throw new Error(`chaos graph does not validate: ${JSON.stringify(problems)}`);
  await grantCredits(db, { teamId, amountMilli: CREDITS_MILLI, reason: 'operator_grant', reference: `chaos-grant-${Date.now()}` });
  // A fresh deployment per chaos run: its runs are exactly the runs this chaos run made.
  const { deploymentId } = await publishDirect(db, chaosGraph, { teamId });
  // The charge a run must carry, read as the API reads it (the live billing_rules row over the default).
  const base = (await findLiveBillingRules(db)).find((row) => row.rule_key === 'runBaseMilli')?.value as number | undefined;
  return { deploymentId, runBaseMilli: base ?? DEFAULT_RUN_BASE_MILLI };
}
