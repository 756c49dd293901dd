import { describe, expect, it } from 'vitest';
import { CronError, parseCron, shortestInterval, toRanges } from './cron.js';

describe('parseCron', () => {
  it.each(['* * * *', '* * * * * * *', '61 * * * *', '* 24 * * *', 'garbage', '', '0 0 L * *', '0 0 * * 1#2', '@daily', '0 0 30 2 *'])(
    'refuses %j', (cron) => expect(() => parseCron(cron)).toThrow(CronError));

  it('reads 5 fields with second 0 and 6 fields with seconds', () => {
    expect(parseCron('*/15 9-17 * * MON-FRI').fields).toMatchObject({ second: [0], minute: [0, 15, 30, 45], dayOfWeek: [1, 2, 3, 4, 5] });
    expect(parseCron('*/20 * * * * *').fields.second).toEqual([0, 20, 40]);
  });

  it('treats weekday 7 as Sunday and notes when either day field may match', () => {
    expect(parseCron('0 0 * * 7').fields.dayOfWeek).toEqual([0]);
    expect(parseCron('0 0 1,15 * MON').daysEitherMatch).toBe(true);
    expect(parseCron('0 0 * * MON').daysEitherMatch).toBe(false);
  });
});

describe('shortestInterval', () => {
  const from = new Date('2026-03-01T00:00:00Z');
  it('measures real fire times', () => {
    expect(shortestInterval('*/1 * * * *', 'UTC', 60, from)).toBe(60);
    expect(shortestInterval('0 */2 * * * *', 'UTC', 60, from)).toBe(120);
    expect(shortestInterval('*/2 * * * * *', 'UTC', 60, from)).toBe(2);
    expect(shortestInterval('0,1 0 * * *', 'UTC', 60, from)).toBe(60);
    expect(shortestInterval('0 0 * * *', 'Europe/Paris', 60, from)).toBeGreaterThanOrEqual(23 * 3600);
  });
});

describe('toRanges', () => {
  it('folds arithmetic runs', () => {
    expect(toRanges([0, 2, 4, 6])).toEqual([{ start: 0, end: 6, step: 2 }]);
    expect(toRanges([1, 2, 3, 10])).toEqual([{ start: 1, end: 3, step: 1 }, { start: 10, end: 10, step: 1 }]);
    expect(toRanges([5])).toEqual([{ start: 5, end: 5, step: 1 }]);
  });
});
