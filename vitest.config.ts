import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', '{api,workflows,activities,worker,shared,temporal,scripts}/**/*.test.ts'],
    // One embedded PostgreSQL and one Temporal dev server for the whole run (test/harness).
    globalSetup: ['test/harness/global-setup.ts'],
    pool: 'forks',
    // Two files at a time even on two cores (Vitest's default is cores - 1): most of a file's time
    // is spent waiting on Temporal, PostgreSQL and child processes, so the suite takes 18 minutes
    // instead of 26-28 (docs/decisions.md "Test suite in two forks").
    maxWorkers: 2,
    // Sized for two files contending for two cores (a test that starts CLI processes one after
    // another took 30 s so); a hang still fails.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
  },
});
