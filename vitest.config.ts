import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', '{api,workflows,activities,worker,shared,temporal,scripts}/**/*.test.ts'],
    // One embedded PostgreSQL and one Temporal dev server for the whole run (test/harness).
    globalSetup: ['test/harness/global-setup.ts'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
  },
});
