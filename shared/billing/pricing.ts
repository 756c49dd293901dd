import type { LlmUsage } from '../llm-providers/llm-client.js';
import type { SiteSettingValue } from '../site-settings/schemas.js';

/**
 * What a run costs, in milli-credits (1000 = 1 credit): a base price charged when the run is
 * created, plus a per-token price for each `llm` block, charged after the block completes
 * (docs/billing.md). The prices are the live rows of `billing_rules` (billing-rules.ts), in the
 * shape of the former site setting `billing.rules`; these functions are pure so callers decide
 * where the rules are read.
 */
export type BillingRules = SiteSettingValue<'billing.rules'>;

export function runBaseCostMilli(rules: Pick<BillingRules, 'runBaseMilli'>): number {
  return rules.runBaseMilli;
}

/** The per-1k-token price of a model: its own when listed, else the default. */
export function llmRatePer1kTokensMilli(rules: Pick<BillingRules, 'llmPer1kTokensMilli' | 'llmModelPer1kTokensMilli'>, model: string): number {
  // hasOwn, so a model named like an Object.prototype member ("constructor") never reads a function.
  return Object.hasOwn(rules.llmModelPer1kTokensMilli, model) ? rules.llmModelPer1kTokensMilli[model]! : rules.llmPer1kTokensMilli;
}

/**
 * ceil(totalTokens × rate / 1000): rounded up so a block that used tokens never costs 0 while the
 * rate is positive. Both factors are integers, so the division is exact whenever it has no remainder.
 * A count that is not a finite non-negative number (a provider's nonsense) is refused rather than priced.
 */
export function llmTokenCostMilli(
  rules: Pick<BillingRules, 'llmPer1kTokensMilli' | 'llmModelPer1kTokensMilli'>,
  model: string,
  usage: LlmUsage,
): number {
  const tokens = usage.totalTokens;
  if (!Number.isSafeInteger(tokens) || tokens < 0) throw new RangeError(`totalTokens must be a non-negative integer, got ${tokens}`);
  return Math.ceil((tokens * llmRatePer1kTokensMilli(rules, model)) / 1000);
}
