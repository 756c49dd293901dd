// Lint is deliberately small: typescript-eslint's recommended rules, plus the rules that keep the
// layers apart (DESIGN.md §2): dependencies point one way, api/workflows/activities → shared, and
// workflow code stays deterministic (no I/O module).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const nodeBuiltins = ['fs', 'path', 'os', 'http', 'https', 'net', 'dns', 'crypto', 'child_process', 'stream', 'url', 'worker_threads', 'zlib', 'util', 'events', 'timers', 'process', 'buffer', 'tls', 'dgram', 'cluster', 'readline', 'perf_hooks', 'async_hooks', 'v8', 'vm'];

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', '.data/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  // shared/ is what every layer builds on: it imports none of them (code used by two layers lives here).
  {
    files: ['shared/**/*.ts', 'temporal/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { group: ['**/workflows/**', '**/activities/**', '**/api/**', '**/worker/**', '**/scripts/**'], message: 'shared/ imports no layer above it: move what both sides need into shared/.' },
        ],
      }],
    },
  },
  // Activities never import workflow code, and the API starts workflows by name with shared contract types.
  {
    files: ['activities/**/*.ts', 'api/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { group: ['**/workflows/**'], message: 'Workflow code is imported only by the worker bundle: put shared logic and contract types in shared/.' },
          { group: ['**/worker/**', '**/scripts/**'], message: 'Only process entries import the worker and scripts.' },
        ],
      }],
    },
  },
  {
    files: ['api/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { group: ['**/workflows/**', '**/activities/**'], message: 'The API talks to workflows through Temporal, with shared contract types: import shared/.' },
          { group: ['**/worker/**', '**/scripts/**'], message: 'Only process entries import the worker and scripts.' },
        ],
      }],
    },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: [
          ...nodeBuiltins.map((name) => ({ name, message: 'Workflow code is deterministic: do I/O in an activity.' })),
          { name: 'pg', message: 'Workflow code never touches the database: call an activity.' },
          { name: 'kysely', message: 'Workflow code never touches the database: call an activity.' },
          { name: 'fastify', message: 'Workflow code never imports the API.' },
          { name: '@temporalio/client', message: 'Use @temporalio/workflow inside workflows.' },
          { name: '@temporalio/worker', message: 'Use @temporalio/workflow inside workflows.' },
        ],
        patterns: [
          { group: ['node:*'], message: 'Workflow code is deterministic: no Node built-ins.' },
          { group: ['**/repository', '**/repository.js', '**/repository.ts'], message: 'Workflows never import repositories: call an activity.' },
          { group: ['**/shared/db/**', '**/activities/**', '**/api/**'], message: 'Workflows import only shared schemas/rules, temporal/ constants and activity types.', allowTypeImports: true },
        ],
      }],
    },
  },
);
