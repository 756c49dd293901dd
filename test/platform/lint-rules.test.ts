import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

// The determinism rule of DESIGN.md §2 is enforced by lint; prove the rule bites.
describe('workflow import restrictions', () => {
  const eslint = new ESLint();
  const lint = async (code: string, filePath = 'workflows/example/flow.ts') => {
    const [result] = await eslint.lintText(code, { filePath });
    return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
  };

  it.each([
    ["import pg from 'pg';", /database/],
    ["import Fastify from 'fastify';", /API/],
    ["import fs from 'node:fs';", /Node built-ins/],
    ["import { readFile } from 'fs';", /deterministic/],
    ["import { findUserById } from '../../shared/identity/repository.js';", /repositories/],
    ["import { createDb } from '../../shared/db/client.js';", /shared schemas/],
  ])('refuses %s in workflow code', async (code, reason) => {
    const messages = await lint(`${code}\nexport const x = 1;\n`);
    expect(messages).toEqual([expect.stringMatching(reason)]);
  });

  it('allows schemas, rules, temporal constants and activity types', async () => {
    const messages = await lint([
      "import { proxyActivities } from '@temporalio/workflow';",
      "import type { Activities } from '../../activities/index.js';",
      "import { databaseActivity } from '../../temporal/activity-options.js';",
      "import { planCodes } from '../../shared/identity/schemas.js';",
      'export const x = [proxyActivities, databaseActivity, planCodes] as unknown as Activities;',
    ].join('\n'));
    expect(messages).toEqual([]);
  });

  it('does not restrict activities', async () => {
    expect(await lint("import pg from 'pg';\nexport const x = pg;\n", 'activities/example/io.ts')).toEqual([]);
  });
});
