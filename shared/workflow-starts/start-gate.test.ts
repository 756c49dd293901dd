import { describe, expect, it } from 'vitest';
import { StartGate } from './start-gate.js';

/** A start that ends when the test says so. */
function heldStart() {
  let finish!: (value: string) => void;
  let fail!: (error: Error) => void;
  const done = new Promise<string>((resolve, reject) => { finish = resolve; fail = reject; });
  return { start: () => done, finish, fail };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('StartGate: a bound on workflow starts in flight', () => {
  it('runs at most the limit at once; the others wait and go in order of arrival as places free up', async () => {
    const gate = new StartGate(2);
    const begun: number[] = [];
    const held = [heldStart(), heldStart(), heldStart(), heldStart()];
    const results = held.map((h, i) => gate.run(() => { begun.push(i); return h.start(); }));
    await settle();
    expect(begun).toEqual([0, 1]);
    held[1]!.finish('b');
    await settle();
    expect(begun).toEqual([0, 1, 2]);
    held[0]!.finish('a');
    await settle();
    expect(begun).toEqual([0, 1, 2, 3]);
    held[2]!.finish('c');
    held[3]!.finish('d');
    expect(await Promise.all(results)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('runIfFree starts nothing while every place is taken, and starts at once when one is free', async () => {
    const gate = new StartGate(1);
    const first = heldStart();
    const running = gate.run(first.start);
    let called = false;
    expect(gate.runIfFree(async () => { called = true; })).toBeNull();
    expect(called).toBe(false);
    first.finish('done');
    await running;
    expect(await gate.runIfFree(async () => 'now')).toBe('now');
  });

  it('a start that fails gives its place back and its error to its caller', async () => {
    const gate = new StartGate(1);
    const failing = heldStart();
    const result = gate.run(failing.start);
    const next = gate.run(async () => 'next');
    failing.fail(new Error('no answer'));
    await expect(result).rejects.toThrow('no answer');
    expect(await next).toBe('next');
    expect(await gate.runIfFree(async () => 'free again')).toBe('free again');
  });
});
