import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DefaultLogger, Runtime, Worker, type ReplayHistoriesIterable, type ReplayResult, type ReplayWorkerOptions } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { bundleWorkflows } from '../../worker/bundle.js';
import { historyFromJSON } from './history-json.js';

// Recorded histories of real executions (scripts/capture-workflow-histories.ts) replayed against
// the workflow bundle of this checkout: a change to workflow code that would break the runs in
// flight when it is deployed (a command added, removed or reordered without `patched()`) fails here.
// docs/app-runs.md "Workflow replay fixtures" says how to refresh them after an intentional change.

// Each replay worker's state changes at INFO drown the output. The one warning left is Core's
// "Failing workflow task … Nondeterminism error" of the last test, which expects it.
Runtime.install({ logger: new DefaultLogger('WARN') });

const historiesDir = fileURLToPath(new URL('./histories/', import.meta.url));
const fixtures = readdirSync(historiesDir).filter((file) => file.endsWith('.json')).sort().map((file) => {
  const name = file.slice(0, -'.json'.length);
  const history = historyFromJSON(JSON.parse(readFileSync(path.join(historiesDir, file), 'utf8')));
  const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
  // The server records the workflow id in the started event; the probe's workflow reads it.
  return { name, history, workflowType: started?.workflowType?.name ?? null, workflowId: started?.workflowId || `replay-${name}` };
});

/** The workflow types the worker bundle registers (workflows/index.ts: `export { x } from …`). */
const exportedWorkflowTypes = [...readFileSync(fileURLToPath(new URL('../../workflows/index.ts', import.meta.url)), 'utf8')
  .matchAll(/^export\s*\{([^}]*)\}/gm)]
  .flatMap(([, names]) => names!.split(',').map((n) => n.trim().split(/\s+as\s+/).at(-1)!).filter(Boolean));

async function replay(options: ReplayWorkerOptions, histories: ReplayHistoriesIterable): Promise<ReplayResult[]> {
  const results: ReplayResult[] = [];
  for await (const result of Worker.runReplayHistories(options, histories)) results.push(result);
  return results;
}

describe('recorded workflow histories replay against the current workflow code', () => {
  let results: ReplayResult[] = [];

  beforeAll(async () => {
    // The harness's prebuilt bundle (test/harness/global-setup.ts), the one every worker test runs.
    results = await replay({ workflowBundle: { codePath: inject('workflowBundlePath') } }, fixtures.map(({ workflowId, history }) => ({ workflowId, history })));
  });

  it('has a fixture of every workflow type the worker registers', () => {
    expect(exportedWorkflowTypes).toEqual(expect.arrayContaining(['appRunWorkflow', 'scheduledRunWorkflow', 'platformProbeWorkflow']));
    const recorded = new Set(fixtures.map((f) => f.workflowType));
    expect(exportedWorkflowTypes.filter((type) => !recorded.has(type)), 'workflow types without a history in test/replay/histories').toEqual([]);
  });

  fixtures.forEach((fixture, i) => {
    it(`replays ${fixture.name} (${fixture.workflowType})`, () => {
      const result = results[i];
      expect(result?.workflowId).toBe(fixture.workflowId);
      // The replay error's own message ("Nondeterminism error: …") says which command differs.
      expect(result?.error, result?.error?.message).toBeUndefined();
    });
  });
});

describe('a replay against different workflow code', () => {
  it('fails with a DeterminismViolationError when the first command differs', async () => {
    const probe = fixtures.find((f) => f.workflowType === 'platformProbeWorkflow');
    expect(probe, 'a platformProbeWorkflow history in test/replay/histories').toBeDefined();
    const divergent = await bundleWorkflows(fileURLToPath(new URL('./divergent-workflows.ts', import.meta.url)));
    const [result] = await replay({ workflowBundle: { code: divergent.code } }, [{ workflowId: probe!.workflowId, history: probe!.history }]);
    expect(result?.error).toBeInstanceOf(DeterminismViolationError);
    expect(result?.error?.message).toMatch(/nondetermin/i);
  }, 120_000);
});
