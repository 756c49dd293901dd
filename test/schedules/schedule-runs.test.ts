import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Graph } from '../../shared/documents/graph.js';
import { grantCredits } from '../../shared/billing/service.js';
import { createProject } from '../../shared/identity/service.js';
import { reconcileSchedules, startScheduleReconciler } from '../../shared/schedules/temporal-sync.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { deleteTemporalSchedules, describeTemporalSchedule } from './helpers.js';
import { until } from '../harness/until.js';

const triggerGraph: Graph = {
  blocks: [
    { id: 'who', type: 'input', name: 'who', config: { valueType: 'string', required: false, default: 'nobody' } },
    { id: 'o', type: 'output', name: 'trigger', config: { value: '{{_trigger.source}} {{_trigger.schedule_id}} {{who}}' } },
  ],
  edges: [{ from: 'who', to: 'o' }],
};
const failingGraph: Graph = {
  blocks: [{ id: 'boom', type: 'transform', name: 'boom', config: { expression: "$error('boom')" } }],
  edges: [],
};

describe('scheduled runs on the real Temporal server', () => {
  let stack: TestStack;
  let ownerJwt: string;
  let ownerId: string;
  let teamId: string;
  let slow: Server;

  const call = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, body?: unknown) => stack.app.inject({
    method, url, headers: { authorization: `Bearer ${ownerJwt}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
  /** A project with a published app and a schedule for it. */
  async function scheduleFor(graph: Graph, fields: Record<string, unknown>) {
    const { deploymentId } = await publishDirect(stack.db, graph, { teamId, publishedBy: ownerId });
    const projectId = (await stack.db.selectFrom('deployments').select('project_id').where('id', '=', deploymentId).executeTakeFirstOrThrow()).project_id;
    const res = await call('POST', `/projects/${projectId}/schedules`, { name: 'job', deployment_id: deploymentId, ...fields });
    expect(res.statusCode, res.body).toBe(201);
    return { projectId, deploymentId, schedule: res.json().schedule as { id: string } };
  }
  const logsOf = (scheduleId: string) => stack.db.selectFrom('schedule_logs').selectAll().where('schedule_id', '=', scheduleId).orderBy('started_at').execute();

  beforeAll(async () => {
    stack = await createTestStack();
    await stack.startWorker();
    const make = credentialFactory(stack);
    const owner = await make.user('owner');
    ownerId = owner.id;
    teamId = (await make.team(owner.id)).id;
    await stack.db.updateTable('teams').set({ plan_code: 'pro' }).where('id', '=', teamId).execute();
    await grantCredits(stack.db, { teamId, amountMilli: 100_000 });
    ownerJwt = await make.jwt(owner.id);
    // CONTRACTS.md: a test that needs a faster schedule lowers the plan minimum; it never skips the check.
    await upsertSiteSetting(stack.db, 'team.quota_limits.schedules', { pro: { maxEnabled: 20, minIntervalSeconds: 1 } });
    stack.deps.settings.invalidate();
    slow = createServer((_req, res) => { setTimeout(() => res.end('late'), 10_000).unref(); });
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    await upsertSiteSetting(stack.db, 'http_block.allow_hosts', [`127.0.0.1:${(slow.address() as AddressInfo).port}`]);
    stack.deps.settings.invalidate();
  });
  afterAll(async () => {
    slow?.closeAllConnections();
    slow?.close();
    if (!stack) return;
    await deleteTemporalSchedules(stack);
    await stack.close();
  });

  it('*/2 * * * * * fires every 2 s through the run pipeline with a schedule identity and writes a log per run', async () => {
    const { projectId, deploymentId, schedule } = await scheduleFor(triggerGraph, { cron_expression: '*/2 * * * * *', trigger_config: { inputs: { who: 'cron' } } });
    const logs = await until(async () => {
      const rows = await logsOf(schedule.id);
      return rows.filter((r) => r.status === 'success').length >= 2 && rows;
    }, 20_000, 'two successful scheduled runs');
    await call('PUT', `/projects/${projectId}/schedules/${schedule.id}`, { enabled: false });
    const first = logs.find((r) => r.status === 'success')!;
    expect(first).toMatchObject({ project_id: projectId, error: null });
    expect(first.scheduled_at).not.toBeNull();
    expect(first.scheduled_at!.getUTCSeconds() % 2).toBe(0);
    expect(first.started_at.getTime()).toBeGreaterThanOrEqual(first.scheduled_at!.getTime());
    expect(first.finished_at!.getTime()).toBeGreaterThanOrEqual(first.started_at.getTime());
    expect(first.result).toMatchObject({ runId: first.run_id, status: 'completed', sessions: [{ blockId: 'o', output: `schedule ${schedule.id} cron` }] });
    const run = await stack.db.selectFrom('runs').selectAll().where('id', '=', first.run_id!).executeTakeFirstOrThrow();
    expect(run).toMatchObject({ deployment_id: deploymentId, trigger_source: 'schedule', status: 'completed', team_id: teamId, api_key_id: null });
    expect(run.inputs).toMatchObject({ who: 'cron', _trigger: { source: 'schedule', schedule_id: schedule.id } });
    const charges = await stack.db.selectFrom('credit_transactions').select('id').where('reference', '=', `run:${first.run_id}`).execute();
    expect(charges).toHaveLength(1);

    const api = await call('GET', `/projects/${projectId}/schedules/${schedule.id}/logs`);
    expect(api.statusCode).toBe(200);
    const body = api.json();
    expect(body).toMatchObject({ total: expect.any(Number), limit: 50, offset: 0 });
    expect(body.logs[0]).toMatchObject({ schedule_id: schedule.id, project_id: projectId });
    const startedAt = body.logs.map((l: { started_at: string }) => l.started_at);
    expect([...startedAt].sort().reverse()).toEqual(startedAt);
  }, 30_000);

  it('logs: limit and offset page through, newest first, with total', async () => {
    const { projectId, schedule } = await scheduleFor(triggerGraph, { name: 'paged', cron_expression: '0 0 1 1 *' });
    for (let i = 0; i < 3; i += 1) expect((await call('POST', `/projects/${projectId}/schedules/${schedule.id}/trigger`)).statusCode).toBe(200);
    const all = (await call('GET', `/projects/${projectId}/schedules/${schedule.id}/logs`)).json();
    expect(all.total).toBe(3);
    const page = (await call('GET', `/projects/${projectId}/schedules/${schedule.id}/logs?limit=1&offset=1`)).json();
    expect(page).toMatchObject({ total: 3, limit: 1, offset: 1 });
    expect(page.logs).toHaveLength(1);
    expect(page.logs[0].id).toBe(all.logs[1].id);
    expect((await call('GET', `/projects/${projectId}/schedules/${schedule.id}/logs?limit=0`)).statusCode).toBe(400);
  });

  it('POST /:id/trigger runs once now: 200 { success: true, result } and a log row without a fire time', async () => {
    const { projectId, schedule } = await scheduleFor(triggerGraph, { cron_expression: '0 0 1 1 *', enabled: false });
    const res = await call('POST', `/projects/${projectId}/schedules/${schedule.id}/trigger`);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ success: true, result: { status: 'completed', timedOut: false, sessions: [{ blockId: 'o', output: `schedule ${schedule.id} nobody` }] } });
    const logs = await logsOf(schedule.id);
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatchObject({ status: 'success', scheduled_at: null, run_id: body.result.runId });
  });

  it('a failing run: trigger answers 500 { success: false, error } and the failed run is logged', async () => {
    const { projectId, schedule } = await scheduleFor(failingGraph, { cron_expression: '0 0 1 1 *', max_retries: 2 });
    const res = await call('POST', `/projects/${projectId}/schedules/${schedule.id}/trigger`);
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({ success: false, error: expect.stringContaining('boom') });
    const logs = await logsOf(schedule.id);
    // A manual trigger runs once, whatever max_retries says.
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatchObject({ status: 'failed', error: expect.stringContaining('boom') });
  });

  it('a scheduled run that fails is retried max_retries times, each attempt a new run with its own log row', async () => {
    const { projectId, schedule } = await scheduleFor(failingGraph, { cron_expression: '*/2 * * * * *', max_retries: 1 });
    const logs = await until(async () => {
      const rows = await logsOf(schedule.id);
      const firstFiring = rows.filter((r) => r.scheduled_at?.getTime() === rows[0]?.scheduled_at?.getTime() && r.status !== 'running');
      return firstFiring.length >= 2 && firstFiring;
    }, 20_000, 'two attempts of one firing');
    await call('PUT', `/projects/${projectId}/schedules/${schedule.id}`, { enabled: false });
    expect(logs.map((l) => l.status)).toEqual(['failed', 'failed']);
    expect(new Set(logs.map((l) => l.run_id)).size).toBe(2);
  }, 30_000);

  it('timeout_ms ends a run that takes longer: status timed_out in the log', async () => {
    const port = (slow.address() as AddressInfo).port;
    const slowGraph: Graph = {
      blocks: [{ id: 'h', type: 'http', name: 'slow', config: { method: 'GET', url: `http://127.0.0.1:${port}/` } }],
      edges: [],
    };
    const { projectId, schedule } = await scheduleFor(slowGraph, { cron_expression: '0 0 1 1 *', timeout_ms: 1000, max_retries: 0 });
    const started = Date.now();
    const res = await call('POST', `/projects/${projectId}/schedules/${schedule.id}/trigger`);
    expect(res.statusCode).toBe(500);
    expect(res.json().error).toMatch(/did not finish within 1 seconds/);
    expect(Date.now() - started).toBeLessThan(8000);
    expect((await logsOf(schedule.id))[0]).toMatchObject({ status: 'timed_out' });
  });

  it('a team without credits: the attempt is refused and logged as failed, nothing is charged', async () => {
    const make = credentialFactory(stack);
    const poorTeam = (await make.team(ownerId, 'Poor')).id;
    await stack.db.updateTable('teams').set({ plan_code: 'pro' }).where('id', '=', poorTeam).execute();
    const { deploymentId } = await publishDirect(stack.db, triggerGraph, { teamId: poorTeam, publishedBy: ownerId });
    const projectId = (await stack.db.selectFrom('deployments').select('project_id').where('id', '=', deploymentId).executeTakeFirstOrThrow()).project_id;
    const schedule = (await call('POST', `/projects/${projectId}/schedules`, { name: 'poor', cron_expression: '0 0 1 1 *', deployment_id: deploymentId })).json().schedule;
    const res = await call('POST', `/projects/${projectId}/schedules/${schedule.id}/trigger`);
    expect(res.statusCode).toBe(500);
    expect(res.json().error).toMatch(/credits/);
    expect(await logsOf(schedule.id)).toMatchObject([{ status: 'failed', run_id: null }]);
    expect(await stack.db.selectFrom('runs').select('id').where('team_id', '=', poorTeam).execute()).toHaveLength(0);
  });

  describe('reconciler: Temporal follows the rows', () => {
    const target = () => ({ client: stack.deps.temporal.client, taskQueueSuffix: stack.config.TEMPORAL_TASK_QUEUE_SUFFIX });

    it('recreates a Temporal Schedule deleted behind the service\'s back, and reverts a pause made in Temporal', async () => {
      const project = (await createProject(stack.db, { teamId, name: 'Drift' })).id;
      const schedule = (await call('POST', `/projects/${project}/schedules`, { name: 'drift', cron_expression: '15 4 * * *', timezone: 'Europe/Berlin' })).json().schedule;
      const handle = stack.deps.temporal.client.schedule.getHandle(`schedule-${schedule.id}`);
      await handle.delete();
      expect(await describeTemporalSchedule(stack, schedule.id)).toBeNull();
      const counts = await reconcileSchedules(stack.db, target());
      expect(counts.created).toBeGreaterThanOrEqual(1);
      const back = await describeTemporalSchedule(stack, schedule.id);
      expect(back?.spec.timezone).toBe('Europe/Berlin');
      expect(back?.spec.calendars?.[0]).toMatchObject({ minute: [{ start: 15, end: 15 }], hour: [{ start: 4, end: 4 }] });
      expect(back?.state.paused).toBe(false);

      await handle.pause('paused by hand');
      await reconcileSchedules(stack.db, target());
      expect((await describeTemporalSchedule(stack, schedule.id))?.state.paused).toBe(false);
    });

    it('deletes the Temporal Schedule of a row deleted while Temporal was unreachable, and orphans of its task queue', async () => {
      const project = (await createProject(stack.db, { teamId, name: 'Orphans' })).id;
      const schedule = (await call('POST', `/projects/${project}/schedules`, { name: 'gone', cron_expression: '0 5 * * *' })).json().schedule;
      // As if the API's Temporal call had failed after the delete committed.
      await stack.db.updateTable('schedules').set({ deleted_at: new Date(), enabled: false }).where('id', '=', schedule.id).execute();
      expect(await describeTemporalSchedule(stack, schedule.id)).not.toBeNull();
      await reconcileSchedules(stack.db, target());
      expect(await describeTemporalSchedule(stack, schedule.id)).toBeNull();
    });

    it('runs on a timer: a deleted Temporal Schedule comes back without any API call', async () => {
      const project = (await createProject(stack.db, { teamId, name: 'Timer' })).id;
      const schedule = (await call('POST', `/projects/${project}/schedules`, { name: 'timer', cron_expression: '0 6 * * *' })).json().schedule;
      const reconciler = startScheduleReconciler(stack.db, target(), { intervalMs: 300, log: () => {} });
      try {
        await reconciler.settled();
        await stack.deps.temporal.client.schedule.getHandle(`schedule-${schedule.id}`).delete();
        await until(() => describeTemporalSchedule(stack, schedule.id), 10_000, 'the reconciler to recreate the schedule');
      } finally {
        await reconciler.stop();
      }
    });
  });
});
