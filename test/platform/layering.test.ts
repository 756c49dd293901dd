import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

// The layering rule of eslint.config.js, checked against the real config: dependencies point one
// way (api, workflows, activities → shared), so a wrong-way import fails `npm run lint`.
const eslint = new ESLint({ cwd: new URL('../..', import.meta.url).pathname });

async function restrictedImports(filePath: string, source: string): Promise<string[]> {
  const [result] = await eslint.lintText(source, { filePath });
  return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

describe('layering lint rule', () => {
  it('refuses shared → workflows, activities and api imports, type-only ones included', async () => {
    expect(await restrictedImports('shared/app-runs/probe.ts', "import { appRunWorkflow } from '../../workflows/app-runs/run-app.js';\nexport const x = appRunWorkflow;\n"))
      .toEqual([expect.stringContaining('shared/ imports no layer above it')]);
    expect(await restrictedImports('shared/app-runs/probe.ts', "import type { Activities } from '../../activities/index.js';\nexport type X = Activities;\n")).toHaveLength(1);
    expect(await restrictedImports('shared/app-runs/probe.ts', "import { buildApp } from '../../api/app.js';\nexport const x = buildApp;\n")).toHaveLength(1);
  });

  it('refuses activities → workflows and api → workflows or activities', async () => {
    expect(await restrictedImports('activities/app-runs/probe.ts', "import { appRunWorkflow } from '../../workflows/app-runs/run-app.js';\nexport const x = appRunWorkflow;\n")).toHaveLength(1);
    expect(await restrictedImports('api/routes/probe.ts', "import type { Activities } from '../../activities/index.js';\nexport type X = Activities;\n")).toHaveLength(1);
  });

  it('lets workflows import activity types but not activity code', async () => {
    expect(await restrictedImports('workflows/app-runs/probe.ts', "import type { Activities } from '../../activities/index.js';\nexport type X = Activities;\n")).toEqual([]);
    expect(await restrictedImports('workflows/app-runs/probe.ts', "import { createActivities } from '../../activities/index.js';\nexport const x = createActivities;\n")).toHaveLength(1);
  });

  it('accepts the direction it asks for', async () => {
    expect(await restrictedImports('api/routes/probe.ts', "import { AppError } from '../../shared/errors.js';\nexport const x = AppError;\n")).toEqual([]);
  });
});
