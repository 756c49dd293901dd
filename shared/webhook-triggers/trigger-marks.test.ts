import { describe, expect, it } from 'vitest';
import { TriggerMarks } from './service.js';

/** A TriggerMarks over a recording writer and a clock the test moves. */
function marksWithClock() {
  let now = 1_000_000;
  const written: string[] = [];
  let failNext = false;
  const marks = new TriggerMarks(async (triggerId) => {
    if (failNext) { failNext = false; throw new Error('write failed'); }
    written.push(triggerId);
  }, () => now);
  return { marks, written, advance: (ms: number) => { now += ms; }, failNextWrite: () => { failNext = true; } };
}

describe('TriggerMarks: last_triggered_at without a statement per call', () => {
  it('writes a trigger once per second at most, each trigger on its own', async () => {
    const { marks, written, advance } = marksWithClock();
    await marks.mark('a');
    await marks.mark('a');
    await marks.mark('b');
    advance(999);
    await marks.mark('a');
    expect(written).toEqual(['a', 'b']);
    advance(1);
    await marks.mark('a');
    expect(written).toEqual(['a', 'b', 'a']);
  });

  it('concurrent calls of the same second send one write', async () => {
    const { marks, written } = marksWithClock();
    await Promise.all(Array.from({ length: 20 }, () => marks.mark('a')));
    expect(written).toEqual(['a']);
  });

  it('a failed write is not remembered: the next call writes, and the failure reaches the caller', async () => {
    const { marks, written, failNextWrite } = marksWithClock();
    failNextWrite();
    await expect(marks.mark('a')).rejects.toThrow('write failed');
    await marks.mark('a');
    expect(written).toEqual(['a']);
  });
});
