import { describe, expect, it } from 'vitest';
import { checkStream } from '../../scripts/chaos/count.js';
import { npmStartLayout } from '../../scripts/chaos/layout.js';
import { killPlan, seededRng } from '../../scripts/chaos/random.js';
import { formatTable } from '../../scripts/chaos/report.js';
import { runChaos } from '../../scripts/chaos/run.js';

// The short version of `npm run chaos` (issue 18): a real `npm start` stack with the worker in its
// own process, clients running llm apps (JSON and resumable SSE streams), and six SIGKILLs, two
// each of PostgreSQL, Temporal and the worker. Whatever the moments the kills land on, no run may
// be lost, charged twice or charged for nothing, no stream may skip or repeat an event, and every
// answer must be a result or a 503 with Retry-After. It starts its own stack (not the test
// harness's), so it takes about 90 s; every step of it is bounded so a stuck stack fails it.
describe('chaos: kills of PostgreSQL, Temporal and the worker while runs are in flight', () => {
  it('loses no run, charges each run once and only for work, and streams every event exactly once', async () => {
    const figures = await runChaos({
      kills: 6,
      seed: 18,
      clients: 4,
      pauseMs: [1_000, 6_000],
      healTimeoutMs: 60_000,
      drainTimeoutMs: 60_000,
      settleTimeoutMs: 60_000,
      keepDataDir: 'on-violation',
      log: () => {},
    });
    const table = formatTable(figures);
    // Every violation, by name, so a failure says which one (and the table the figures).
    expect(figures.violations, table).toEqual({
      lost: 0, chargedTwice: 0, chargedWithoutRunning: 0, streamGapsOrRepeats: 0, refusedWithoutRetryAfter: 0,
      serverErrors: 0, otherFailures: 0, refusedButCharged: 0, healTimeouts: 0, harnessErrors: 0,
    });
    expect(figures.kills.byTarget, table).toEqual({ postgres: 2, temporal: 2, worker: 2 });
    // The clients kept runs in flight all along: runs were made, completed, and streamed.
    expect(figures.runs.completed, table).toBeGreaterThan(5);
    expect(figures.runs.streamsChecked, table).toBeGreaterThan(0);
  }, 235_000);
});

// The counting must be able to see what it counts: a zero above means nothing went wrong, not
// that the check looks past it.
describe('chaos counting', () => {
  const stored = [{ id: 1, type: 'run_start' }, { id: 4, type: 'block_start' }, { id: 5, type: 'block_chunk' }, { id: 9, type: 'run_complete' }];

  it('accepts a stream that received exactly the stored events, in order', () => {
    expect(checkStream(stored, stored).ok).toBe(true);
  });

  it('finds skipped, repeated, unknown and out-of-order events, and a missing end', () => {
    expect(checkStream([stored[0]!, stored[2]!, stored[3]!], stored)).toMatchObject({ ok: false, missing: [4] });
    expect(checkStream([stored[0]!, stored[1]!, stored[1]!, stored[2]!, stored[3]!], stored)).toMatchObject({ ok: false, repeated: [4], outOfOrder: true });
    expect(checkStream([...stored.slice(0, 3), { id: 7, type: 'block_chunk' }, stored[3]!], stored)).toMatchObject({ ok: false, extra: [7] });
    expect(checkStream([stored[0]!, stored[2]!, stored[1]!, stored[3]!], stored)).toMatchObject({ ok: false, outOfOrder: true });
    expect(checkStream(stored.slice(0, 3), stored)).toMatchObject({ ok: false, terminal: false });
  });

  it('plans an even share of kills per target, in a seeded order', () => {
    const targets = Object.keys(npmStartLayout.targets);
    const plan = killPlan(100, seededRng(7), targets);
    expect(plan).toEqual(killPlan(100, seededRng(7), targets));
    for (const target of ['postgres', 'temporal', 'worker']) expect(plan.filter((t) => t === target).length).toBeGreaterThanOrEqual(33);
    expect([...killPlan(6, seededRng(1), targets)].sort()).toEqual(['postgres', 'postgres', 'temporal', 'temporal', 'worker', 'worker']);
  });
});
