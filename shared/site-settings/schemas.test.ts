import { describe, expect, it } from 'vitest';
import { resolveSiteSetting, siteSettingDefinitions } from './schemas.js';

describe('resolveSiteSetting', () => {
  it('uses defaults when nothing is stored', () => {
    expect(resolveSiteSetting('run.response_limit', undefined)).toEqual({ maxBytes: 8_388_608 });
    expect(resolveSiteSetting('team.quota_limits.schedules', undefined)).toEqual(siteSettingDefinitions['team.quota_limits.schedules'].defaults);
  });

  it('falls back to defaults on wrong types, zero and negative limits, and reports why', () => {
    const reasons: string[] = [];
    const report = (_key: string, reason: string) => reasons.push(reason);
    expect(resolveSiteSetting('run.response_limit', { maxBytes: 0 }, report)).toEqual({ maxBytes: 8_388_608 });
    expect(resolveSiteSetting('run.max_timeout_seconds', 'forever', report)).toBe(300);
    expect(resolveSiteSetting('http_block.allow_hosts', 'localhost', report)).toEqual([]);
    expect(reasons).toHaveLength(3);
  });

  it('keeps a valid scalar or list as it is', () => {
    expect(resolveSiteSetting('run.max_timeout_seconds', 45)).toBe(45);
    expect(resolveSiteSetting('http_block.allow_hosts', ['127.0.0.1/32'])).toEqual(['127.0.0.1/32']);
  });

  it('billing.rules: a subset merges over the defaults; a negative or fractional price falls back to all defaults', () => {
    const defaults = { runBaseMilli: 10, llmPer1kTokensMilli: 20, llmModelPer1kTokensMilli: {} };
    expect(resolveSiteSetting('billing.rules', undefined)).toEqual(defaults);
    expect(resolveSiteSetting('billing.rules', { llmModelPer1kTokensMilli: { 'gpt-big': 300 } }))
      .toEqual({ ...defaults, llmModelPer1kTokensMilli: { 'gpt-big': 300 } });
    expect(resolveSiteSetting('billing.rules', { runBaseMilli: 0 })).toEqual({ ...defaults, runBaseMilli: 0 });
    const reasons: string[] = [];
    const report = (_key: string, reason: string) => reasons.push(reason);
    expect(resolveSiteSetting('billing.rules', { runBaseMilli: -1 }, report)).toEqual(defaults);
    expect(resolveSiteSetting('billing.rules', { llmPer1kTokensMilli: 2.5 }, report)).toEqual(defaults);
    expect(resolveSiteSetting('billing.rules', { llmModelPer1kTokensMilli: { m: -5 } }, report)).toEqual(defaults);
    expect(resolveSiteSetting('billing.rules', { llmModelPer1kTokensMilli: { '': 5 } }, report)).toEqual(defaults);
    expect(resolveSiteSetting('billing.rules', 20, report)).toEqual(defaults);
    expect(reasons).toHaveLength(5);
  });
});
