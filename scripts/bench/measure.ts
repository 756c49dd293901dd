/** Runs `fn` for a warm-up, then `rounds` timed rounds of `iterations` calls; returns the median ops/s. */
export async function opsPerSecond(fn: () => Promise<unknown> | unknown, iterations: number, rounds = 5): Promise<number> {
  for (let i = 0; i < Math.min(iterations, 200); i++) await fn();
  const rates: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const started = performance.now();
    for (let i = 0; i < iterations; i++) await fn();
    rates.push(iterations / ((performance.now() - started) / 1000));
  }
  return median(rates);
}

/** One round of `total` calls with `concurrency` callers in flight at once: its ops/s. */
export async function concurrentRound(fn: () => Promise<unknown>, total: number, concurrency: number): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => { while (next++ < total) await fn(); }));
  return total / ((performance.now() - started) / 1000);
}

export const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
/** The item whose `key` is the median of the items'. */
export const medianBy = <T>(items: T[], key: (item: T) => number): T => [...items].sort((a, b) => key(a) - key(b))[Math.floor(items.length / 2)]!;

/** Like opsPerSecond, with `concurrency` callers in flight at once (for servers). */
export async function concurrentOpsPerSecond(fn: () => Promise<unknown>, total: number, concurrency: number, rounds = 3): Promise<number> {
  await concurrentRound(fn, total, concurrency);
  const rates: number[] = [];
  for (let r = 0; r < rounds; r++) rates.push(await concurrentRound(fn, total, concurrency));
  return median(rates);
}

export interface Comparison { name: string; baseline: string; baselineOps: number; candidate: string; candidateOps: number }

export function report(rows: Comparison[]): void {
  console.log('\n| benchmark | baseline (ops/s) | ours (ops/s) | ratio ours/baseline |');
  console.log('|---|---|---|---|');
  for (const r of rows) {
    console.log(`| ${r.name} | ${r.baseline}: ${Math.round(r.baselineOps)} | ${r.candidate}: ${Math.round(r.candidateOps)} | ${(r.candidateOps / r.baselineOps).toFixed(2)}× |`);
  }
}
