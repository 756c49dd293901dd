import { withTimeout } from '../../shared/timeout.js';

// Every wait of the chaos run is bounded: a stack that does not come back must fail the run with a
// message saying what it waited for, never hang it.

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class ChaosTimeout extends Error {
  override name = 'ChaosTimeout';
}

/** Rejects with `ChaosTimeout(what)` when `promise` has not settled within `ms`. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return withTimeout(promise, ms, () => new ChaosTimeout(`${what}: no result within ${Math.round(ms / 1000)} s`));
}

/** Polls `check` every `everyMs` until it returns a value other than undefined; throws ChaosTimeout after `ms`. */
export async function until<T>(check: () => Promise<T | undefined>, ms: number, what: string, everyMs = 200): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() >= deadline) throw new ChaosTimeout(`${what}: not within ${Math.round(ms / 1000)} s`);
    await sleep(everyMs);
  }
}

export function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
