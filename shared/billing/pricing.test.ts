import { describe, expect, it } from 'vitest';
import { resolveSiteSetting } from '../site-settings/schemas.js';
import { llmRatePer1kTokensMilli, llmTokenCostMilli, runBaseCostMilli, type BillingRules } from './pricing.js';

const usage = (totalTokens: number) => ({ promptTokens: 0, completionTokens: totalTokens, totalTokens });
const rules = (over: Partial<BillingRules> = {}): BillingRules => ({ runBaseMilli: 10, llmPer1kTokensMilli: 20, llmModelPer1kTokensMilli: {}, ...over });

describe('runBaseCostMilli', () => {
  it('is the rule\'s base, and the defaults keep today\'s flat price', () => {
    expect(runBaseCostMilli(rules({ runBaseMilli: 0 }))).toBe(0);
    expect(runBaseCostMilli(rules({ runBaseMilli: 250 }))).toBe(250);
    expect(runBaseCostMilli(resolveSiteSetting('billing.rules', undefined))).toBe(10);
  });
});

describe('llmTokenCostMilli', () => {
  it('charges ceil(totalTokens × rate / 1000) at the default rate', () => {
    expect(llmTokenCostMilli(rules(), 'any', usage(1000))).toBe(20);
    expect(llmTokenCostMilli(rules(), 'any', usage(1500))).toBe(30);
    // 1 token at 20 per 1k is 0.02: rounded up, never free.
    expect(llmTokenCostMilli(rules(), 'any', usage(1))).toBe(1);
    expect(llmTokenCostMilli(rules(), 'any', usage(50))).toBe(1);
    expect(llmTokenCostMilli(rules(), 'any', usage(51))).toBe(2);
    expect(llmTokenCostMilli(rules(), 'any', usage(0))).toBe(0);
  });

  it('prices by totalTokens, not by the parts', () => {
    expect(llmTokenCostMilli(rules({ llmPer1kTokensMilli: 1000 }), 'm', { promptTokens: 3, completionTokens: 4, totalTokens: 9 })).toBe(9);
  });

  it('uses a listed model\'s own rate, the default for others', () => {
    const r = rules({ llmModelPer1kTokensMilli: { 'gpt-big': 300, 'free-model': 0 } });
    expect(llmRatePer1kTokensMilli(r, 'gpt-big')).toBe(300);
    expect(llmTokenCostMilli(r, 'gpt-big', usage(2001))).toBe(601); // 600.3 rounded up
    expect(llmTokenCostMilli(r, 'free-model', usage(10_000))).toBe(0);
    expect(llmTokenCostMilli(r, 'gpt-small', usage(2001))).toBe(41); // 40.02 rounded up
    // Names are exact: no prefix or case matching.
    expect(llmRatePer1kTokensMilli(r, 'GPT-BIG')).toBe(20);
  });

  it('never reads Object.prototype members as rates', () => {
    expect(llmRatePer1kTokensMilli(rules(), 'constructor')).toBe(20);
    expect(llmRatePer1kTokensMilli(rules(), '__proto__')).toBe(20);
    expect(llmTokenCostMilli(rules(), 'toString', usage(1000))).toBe(20);
  });

  it('refuses counts it cannot price', () => {
    for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => llmTokenCostMilli(rules(), 'm', usage(bad))).toThrow(RangeError);
    }
  });
});
