import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedDemoTenant } from '../../scripts/dev/seed-demo.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { until } from '../harness/until.js';

// The demo seed of `npm start` gains an app that waits for an approval (issue 44); the start banner
// prints the two calls below. Seeded twice: the same apps.
describe('the demo app that waits for an approval', () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await createTestStack();
    await stack.startWorker();
  });
  afterAll(() => stack?.close());

  it('is seeded once, waits (202) and completes when approved as the banner shows', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'demo-seed-'));
    const demo = await seedDemoTenant(stack.db, dir);
    expect(await seedDemoTenant(stack.db, dir)).toEqual(demo);
    const auth = { authorization: `Bearer ${demo.apiKey}` };
    const started = await stack.app.inject({
      method: 'POST', url: `/api/released-app/${demo.approvalDeploymentId}/run`, headers: auth, payload: { inputs: { draft: 'Thanks, see you Monday' }, stream: false },
    });
    expect(started.statusCode).toBe(202);
    const { runId, waiting } = started.json();
    expect(waiting).toMatchObject({ blockId: 'approve', blockType: 'approval' });
    const approved = await stack.app.inject({ method: 'POST', url: `/api/runs/${runId}/approvals/approve`, headers: auth, payload: { approved: true } });
    expect(approved.statusCode).toBe(200);
    await until(async () => (await stack.db.selectFrom('runs').select('status').where('id', '=', runId).executeTakeFirstOrThrow()).status === 'completed', 10_000, 'the run to complete');
    const events = await stack.app.inject({ method: 'GET', url: `/api/runs/${runId}/events`, headers: auth });
    const last = JSON.parse(events.body.trim().split('\n').at(-1)!) as { type: string; sessions: Array<{ blockId: string; output: unknown }> };
    expect(last.type).toBe('run_complete');
    expect(last.sessions.find((s) => s.blockId === 'sent')?.output).toBe('Sent: Thanks, see you Monday');
  });
});
