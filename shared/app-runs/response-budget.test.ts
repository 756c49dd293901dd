import { describe, expect, it } from 'vitest';
import { siteSettingDefinitions } from '../site-settings/schemas.js';
import { ResponseBudget } from './response-budget.js';

describe('ResponseBudget', () => {
  it('allows exactly maxBytes and fails once exceeded, remembering the first excess', () => {
    const budget = new ResponseBudget(100);
    expect(budget.add(60)).toBe(true);
    expect(budget.add(40)).toBe(true);
    expect(budget.exceeded).toBe(false);
    expect(budget.actualBytes).toBeNull();
    expect(budget.add(0)).toBe(true);
    expect(budget.add(5)).toBe(false);
    expect(budget.exceeded).toBe(true);
    expect(budget.actualBytes).toBe(105);
    expect(budget.add(1000)).toBe(false);
    expect(budget.actualBytes).toBe(105);
    expect(budget.usedBytes).toBe(105);
  });
  it('a single oversized piece exceeds at once', () => {
    const budget = new ResponseBudget(8_388_608);
    expect(budget.add(8_388_609)).toBe(false);
    expect(budget.actualBytes).toBe(8_388_609);
  });
  it('renders the §7.2 body', () => {
    const budget = new ResponseBudget(siteSettingDefinitions['run.response_limit'].defaults.maxBytes);
    budget.add(9_000_000);
    const body = budget.tooLargeBody('run-1');
    expect(body).toEqual({
      runId: 'run-1', error: 'response_too_large', message: expect.any(String),
      actualBytes: 9_000_000, limitBytes: 8_388_608, executionStatus: 'response_too_large', hint: expect.any(String),
    });
    expect(body.hint).toMatch(/stream/);
    expect(body.hint).toContain('run.response_limit');
  });
});
