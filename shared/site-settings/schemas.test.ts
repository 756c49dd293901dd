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
});
