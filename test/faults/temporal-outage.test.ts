import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTemporalDevServer, type DevServerHandle } from '../../temporal/dev-server.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import { RUN_BASE_COST_MILLI } from '../harness/billing.js';
import { credentialFactory } from '../harness/credentials.js';
import { readSse } from '../harness/sse.js';
import type { TestStack } from '../harness/stack.js';
import { until } from '../harness/until.js';
import { startLlmAppStack, type LlmAppStack } from './llm-app-stack.js';

// Issue 18, scenario one: the Temporal server is SIGKILLed under a working service. A caller waiting
// for a JSON result is told 503 at once and is not charged; a stream is accepted, waits, and runs
// once Temporal is back; a run that was in flight completes; nothing stays `running`; each run that
// ran is charged once. This file brings its own dev server (on a SQLite file, as `npm start` does)
// so that it can kill it.
describe('faults: the Temporal server is killed', () => {
  let temporal: DevServerHandle;
  let dataDir: string;
  let fixture: LlmAppStack;
  let stack: TestStack;
  let base: string;
  let teamId: string;
  let ownerJwt: string;
  let schedulePath: string;

  const startServer = (port?: number) => startTemporalDevServer({ namespace: 'default', dbFile: path.join(dataDir, 'temporal.sqlite'), port });
  const run = (body: Record<string, unknown>) => fixture.run(body);
  const readyz = async () => (await fetch(`${base}/readyz`)).status;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'wfapp-temporal-outage-'));
    temporal = await startServer();
    fixture = await startLlmAppStack({
      repeat: 3, temporalAddress: temporal.address,
      env: { WORKFLOW_DISPATCH_INTERVAL_MS: '200', RUN_RECONCILE_INTERVAL_SECONDS: '1', RUN_RECONCILE_MIN_AGE_SECONDS: '5' },
    });
    ({ stack, base } = fixture);
    const { tenant, deploymentId } = fixture;
    teamId = tenant.team.id;
    // A schedule, to trigger by hand during the outage (its Temporal Schedule is made while the server is up).
    ownerJwt = await credentialFactory(stack).jwt(tenant.owner.id);
    const projectId = (await stack.db.selectFrom('deployments').select('project_id').where('id', '=', deploymentId).executeTakeFirstOrThrow()).project_id;
    const created = await stack.app.inject({
      method: 'POST', url: `/projects/${projectId}/schedules`, headers: { authorization: `Bearer ${ownerJwt}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'nightly', deployment_id: deploymentId, cron_expression: '0 3 * * *' }),
    });
    expect(created.statusCode, created.body).toBe(201);
    schedulePath = `/projects/${projectId}/schedules/${(created.json() as { schedule: { id: string } }).schedule.id}`;
  }, 120_000);
  afterAll(async () => {
    await fixture?.close();
    await temporal?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('JSON callers get 503 uncharged, streams wait and run, in-flight runs complete, nothing stays running', async () => {
    const healthy = await run({ stream: false });
    expect(healthy.status).toBe(200);
    expect(((await healthy.json()) as { status: string }).status).toBe('completed');

    // A run in flight when the server dies.
    const inFlight = await run({ stream: true, format: 'sse' });
    const inFlightId = inFlight.headers.get('x-run-id')!;
    const inFlightEvents = readSse(inFlight.body!);
    await until(async () => (await stack.db.selectFrom('run_events').select('id').where('run_id', '=', inFlightId).where('type', '=', 'block_chunk').execute()).length > 0, 10_000, 'the in-flight run streaming');

    process.kill(temporal.pid!, 'SIGKILL');
    await temporal.exited;
    expect(await readyz()).toBe(503);

    // The first JSON caller finds out by trying (its start fails, within the 5 s start deadline); its
    // run is withdrawn in the statement that refunds it.
    let started = performance.now();
    const first = await run({ stream: false });
    expect(first.status).toBe(503);
    expect(first.headers.get('retry-after')).toBe('5');
    expect(await first.json()).toEqual({ error: 'dependency_unavailable', message: 'Temporal is unavailable; retry shortly', dependency: 'temporal' });
    expect(performance.now() - started).toBeLessThan(8_000);

    // Later JSON callers are refused before anything is written: at once, no run row.
    const runsBefore = await countRuns();
    started = performance.now();
    const second = await run({ stream: false });
    expect(second.status).toBe(503);
    expect(second.headers.get('retry-after')).toBe('5');
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(await countRuns()).toBe(runsBefore);

    // A schedule triggered by hand waits for its result too: refused the same way, nothing recorded.
    const trigger = await stack.app.inject({ method: 'POST', url: `${schedulePath}/trigger`, headers: { authorization: `Bearer ${ownerJwt}` } });
    expect(trigger.statusCode).toBe(503);
    expect(trigger.headers['retry-after']).toBe('5');
    expect(trigger.json()).toMatchObject({ error: 'dependency_unavailable', dependency: 'temporal' });
    expect(await stack.db.selectFrom('workflow_starts').select('workflow_id').where('workflow_id', 'like', 'scheduled-run-%').execute()).toEqual([]);
    expect(await stack.db.selectFrom('schedule_logs').select('id').execute()).toEqual([]);

    // A stream is accepted: run_start at once, and it waits for Temporal.
    const queued = await run({ stream: true, format: 'sse' });
    expect(queued.status).toBe(200);
    const queuedId = queued.headers.get('x-run-id')!;
    const queuedEvents = readSse(queued.body!);
    expect(await stack.db.selectFrom('workflow_starts').select('workflow_id').where('workflow_id', '=', workflowIds.appRun(queuedId)).executeTakeFirst()).toBeDefined();

    // Temporal comes back on its port and its data: the queued run starts, the in-flight one finishes.
    temporal = await startServer(Number(temporal.address.split(':')[1]));
    const queuedSeen = await queuedEvents;
    expect(queuedSeen.map((e) => e.type).at(0)).toBe('run_start');
    expect(queuedSeen.at(-1)?.type).toBe('run_complete');
    const inFlightSeen = await inFlightEvents;
    expect(inFlightSeen.at(-1)?.type).toBe('run_complete');
    await until(async () => (await readyz()) === 200, 10_000, 'readiness after the restart');

    // Nothing stays running or queued; the ledger: the withdrawn run refunded, each run that ran charged once.
    await until(async () => (await stack.db.selectFrom('runs').select('id').where('status', '=', 'running').execute()).length === 0, 20_000, 'no run running');
    expect(await stack.db.selectFrom('workflow_starts').selectAll().execute()).toEqual([]);
    const firstRun = await stack.db.selectFrom('runs').select(['id', 'status', 'error']).where('status', '=', 'failed').execute();
    expect(firstRun).toEqual([{ id: expect.any(String), status: 'failed', error: 'not_started' }]);
    const ledger = await stack.db.selectFrom('credit_transactions').select(['reason', 'reference', 'amount_milli'])
      .where('team_id', '=', teamId).where('reason', 'in', ['run', 'run_refund']).execute();
    const netOf = (runId: string) => ledger.filter((t) => t.reference === `run:${runId}` || t.reference === `refund:run:${runId}`).reduce((sum, t) => sum + t.amount_milli, 0);
    expect(netOf(firstRun[0]!.id)).toBe(0);
    expect(ledger.filter((t) => t.reason === 'run_refund')).toHaveLength(1);
    for (const runId of [inFlightId, queuedId]) expect(netOf(runId)).toBe(-RUN_BASE_COST_MILLI);
    // Temporal answers again: a JSON run works.
    const after = await run({ stream: false });
    expect(after.status).toBe(200);
    expect(((await after.json()) as { status: string }).status).toBe('completed');
  }, 120_000);

  const countRuns = async () => (await stack.db.selectFrom('runs').select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow()).n;
});
