// Lint is deliberately small: typescript-eslint's recommended rules, plus the one rule that keeps
// workflow code deterministic (DESIGN.md §2): workflows never import I/O modules.
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
