import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleGraph } from '../../shared/documents/example-graph.js';
import { addTeamMember, createProject } from '../../shared/identity/service.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { deleteTemporalSchedules, describeTemporalSchedule } from './helpers.js';

describe('schedules API (spec §4.3, §7.4, §8.2)', () => {
  let stack: TestStack;
  let make: ReturnType<typeof credentialFactory>;
  let owner: { id: string };
  let teamId: string;
  let projectId: string;
  let ownerJwt: string;
  let memberJwt: string;
  let outsiderJwt: string;
  let apiKey: string;

  const call = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, token: string, body?: unknown) => stack.app.inject({
    method, url, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
  const base = () => `/projects/${projectId}/schedules`;
  const create = (body: Record<string, unknown>, token = ownerJwt, project = projectId) => call('POST', `/projects/${project}/schedules`, token, body);
  const rowCount = async () => (await stack.db.selectFrom('schedules').select('id').execute()).length;
  const setQuota = async (value: unknown) => {
    await upsertSiteSetting(stack.db, 'team.quota_limits.schedules', value);
    stack.deps.settings.invalidate('team.quota_limits.schedules');
  };
  let n = 0;
  const uniqueName = () => `job-${(n += 1)}`;

  beforeAll(async () => {
    stack = await createTestStack();
    make = credentialFactory(stack);
    owner = await make.user('owner');
    const member = await make.user('member');
    const outsider = await make.user('outsider');
    teamId = (await make.team(owner.id)).id;
    await addTeamMember(stack.db, { teamId, userId: member.id, role: 'member' });
    projectId = (await createProject(stack.db, { teamId, name: 'Jobs' })).id;
    ownerJwt = await make.jwt(owner.id);
    memberJwt = await make.jwt(member.id);
    outsiderJwt = await make.jwt(outsider.id);
    apiKey = (await make.apiKey(teamId, owner.id)).token;
    // This file checks CRUD and quotas on the free plan; counts are raised where a test needs room.
    await setQuota({ free: { maxEnabled: 100, minIntervalSeconds: 300 } });
  });
  afterAll(async () => {
    if (!stack) return;
    await deleteTemporalSchedules(stack);
    await stack.close();
  });

  it('creates with the spec defaults and one Temporal Schedule that carries the cron, timezone and paused state', async () => {
    const res = await create({ name: 'nightly', cron_expression: '0 3 * * *' });
    expect(res.statusCode, res.body).toBe(201);
    const { schedule } = res.json();
    expect(schedule).toMatchObject({
      project_id: projectId, team_id: teamId, deployment_id: null, name: 'nightly', description: null, cron_expression: '0 3 * * *',
      timezone: 'UTC', trigger_config: {}, enabled: true, timeout_ms: 300_000, max_retries: 3, deleted_at: null,
    });
    const temporal = await describeTemporalSchedule(stack, schedule.id);
    expect(temporal?.state.paused).toBe(false);
    expect(temporal?.spec.timezone).toBe('UTC');
    expect(temporal?.spec.calendars?.[0]).toMatchObject({ second: [{ start: 0, end: 0 }], minute: [{ start: 0, end: 0 }], hour: [{ start: 3, end: 3 }] });
    expect(temporal?.action).toMatchObject({ workflowType: 'scheduledRunWorkflow', args: [{ scheduleId: schedule.id }] });
  });

  it('honours the site default timeout (schedule.default_timeout_ms) and explicit values', async () => {
    await upsertSiteSetting(stack.db, 'schedule.default_timeout_ms', 45_000);
    stack.deps.settings.invalidate('schedule.default_timeout_ms');
    const a = await create({ name: uniqueName(), cron_expression: '0 4 * * *' });
    expect(a.json().schedule.timeout_ms).toBe(45_000);
    const b = await create({ name: uniqueName(), cron_expression: '0 4 * * *', timeout_ms: 5000, max_retries: 0, timezone: 'Europe/Paris', description: 'd', enabled: false, trigger_config: { inputs: { name: 'Ada' } } });
    expect(b.json().schedule).toMatchObject({ timeout_ms: 5000, max_retries: 0, timezone: 'Europe/Paris', description: 'd', enabled: false, trigger_config: { inputs: { name: 'Ada' } } });
    expect((await describeTemporalSchedule(stack, b.json().schedule.id))?.state.paused).toBe(true);
  });

  it('lists newest first and reads one; API keys of the team work too', async () => {
    const first = (await create({ name: uniqueName(), cron_expression: '0 5 * * *' })).json().schedule;
    const second = (await create({ name: uniqueName(), cron_expression: '0 6 * * *' }, apiKey)).json().schedule;
    const list = await call('GET', base(), memberJwt);
    expect(list.statusCode).toBe(200);
    const ids = list.json().schedules.map((s: { id: string }) => s.id);
    expect(ids.indexOf(second.id)).toBeLessThan(ids.indexOf(first.id));
    const createdAt = list.json().schedules.map((s: { created_at: string }) => s.created_at);
    expect([...createdAt].sort().reverse()).toEqual(createdAt);
    const one = await call('GET', `${base()}/${first.id}`, memberJwt);
    expect(one.json()).toEqual({ schedule: first });
  });

  it.each([
    ['no name', { cron_expression: '0 3 * * *' }],
    ['no cron', { name: 'x' }],
    ['empty cron', { name: 'x', cron_expression: '' }],
    ['blank name', { name: '  ', cron_expression: '0 3 * * *' }],
  ])('refuses a create with %s: 400 name 和 cron_expression are required', async (_label, body) => {
    const before = await rowCount();
    const res = await create(body);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('name 和 cron_expression are required');
    expect(await rowCount()).toBe(before);
  });

  it.each(['* * * *', '* * * * * * *', '61 * * * *', 'garbage', '0 0 L * *', '0 0 30 2 *'])('refuses cron %j: 400 Cron expression invalid', async (cron) => {
    const before = await rowCount();
    const res = await create({ name: uniqueName(), cron_expression: cron });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().error).toBe('Cron expression invalid');
    expect(await rowCount()).toBe(before);
  });

  it('refuses an unknown timezone', async () => {
    const before = await rowCount();
    const res = await create({ name: uniqueName(), cron_expression: '0 3 * * *', timezone: 'Mars/Olympus_Mons' });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('Timezone invalid');
    expect(await rowCount()).toBe(before);
  });

  it.each([
    ['*/1 * * * *', 60], ['* * * * * *', 1], ['0 */2 * * * *', 120], ['*/2 * * * *', 120],
  ])('free plan (5 minutes): %j is refused with code schedule_interval_limit', async (cron, actual) => {
    const before = await rowCount();
    const res = await create({ name: uniqueName(), cron_expression: cron });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'execution frequency too high', code: 'schedule_interval_limit', minIntervalSeconds: 300, actualIntervalSeconds: actual });
    expect(await rowCount()).toBe(before);
  });

  it('free plan accepts every 5 minutes; the interval follows real fire times (0,1 0 * * * is 60 s apart)', async () => {
    expect((await create({ name: uniqueName(), cron_expression: '*/5 * * * *' })).statusCode).toBe(201);
    const res = await create({ name: uniqueName(), cron_expression: '0,1 0 * * *' });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('schedule_interval_limit');
  });

  it('refuses a deployment of another project, and accepts one of this project', async () => {
    const elsewhere = await publishDirect(stack.db, exampleGraph, { teamId, publishedBy: owner.id });
    const before = await rowCount();
    const res = await create({ name: uniqueName(), cron_expression: '0 3 * * *', deployment_id: elsewhere.deploymentId });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('deployment does not exist or does not belong to the project');
    const missing = await create({ name: uniqueName(), cron_expression: '0 3 * * *', deployment_id: randomUUID() });
    expect(missing.json().error).toBe('deployment does not exist or does not belong to the project');
    expect(await rowCount()).toBe(before);
    const elsewhereProject = (await stack.db.selectFrom('deployments').select('project_id').where('id', '=', elsewhere.deploymentId).executeTakeFirstOrThrow()).project_id;
    const ok = await create({ name: uniqueName(), cron_expression: '0 3 * * *', deployment_id: elsewhere.deploymentId }, ownerJwt, elsewhereProject);
    expect(ok.statusCode, ok.body).toBe(201);
  });

  it('403 project administrator required for a member create, update and delete; nothing changes', async () => {
    const row = (await create({ name: uniqueName(), cron_expression: '0 3 * * *' })).json().schedule;
    const before = await rowCount();
    for (const res of [
      await create({ name: uniqueName(), cron_expression: '0 3 * * *' }, memberJwt),
      await call('PUT', `${base()}/${row.id}`, memberJwt, { name: 'renamed' }),
      await call('DELETE', `${base()}/${row.id}`, memberJwt),
    ]) {
      expect(res.statusCode).toBe(403);
      expect(res.json().error).toBe('project administrator required');
    }
    expect(await rowCount()).toBe(before);
    expect((await call('GET', `${base()}/${row.id}`, ownerJwt)).json().schedule).toEqual(row);
  });

  it('403 no access to the project for a non-member; 404 project does not exist for an unknown project', async () => {
    for (const res of [await call('GET', base(), outsiderJwt), await create({ name: uniqueName(), cron_expression: '0 3 * * *' }, outsiderJwt)]) {
      expect(res.statusCode).toBe(403);
      expect(res.json().error).toBe('no access to the project');
    }
    const foreign = await make.team(owner.id, 'Foreign');
    const foreignKey = (await make.apiKey(foreign.id, owner.id)).token;
    const byForeignKey = await call('GET', base(), foreignKey);
    expect(byForeignKey.statusCode).toBe(403);
    expect(byForeignKey.json().error).toBe('no access to the project');
    const missing = await create({ name: uniqueName(), cron_expression: '0 3 * * *' }, ownerJwt, randomUUID());
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error).toBe('project does not exist');
    expect((await create({ name: uniqueName(), cron_expression: '0 3 * * *' }, ownerJwt, 'not-a-uuid')).statusCode).toBe(404);
  });

  it('409 task name already exists (create and rename); a deleted schedule frees its name', async () => {
    const name = uniqueName();
    const first = (await create({ name, cron_expression: '0 3 * * *' })).json().schedule;
    const before = await rowCount();
    const dup = await create({ name, cron_expression: '0 4 * * *' });
    expect(dup.statusCode).toBe(409);
    expect(dup.json().error).toBe('task name already exists');
    expect(await rowCount()).toBe(before);
    const other = (await create({ name: uniqueName(), cron_expression: '0 3 * * *' })).json().schedule;
    const rename = await call('PUT', `${base()}/${other.id}`, ownerJwt, { name });
    expect(rename.statusCode).toBe(409);
    expect((await call('GET', `${base()}/${other.id}`, ownerJwt)).json().schedule.name).toBe(other.name);
    expect((await call('DELETE', `${base()}/${first.id}`, ownerJwt)).statusCode).toBe(200);
    expect((await create({ name, cron_expression: '0 4 * * *' })).statusCode).toBe(201);
  });

  it('PUT updates any subset, returns the full record and updates the Temporal Schedule in place', async () => {
    const row = (await create({ name: uniqueName(), cron_expression: '0 3 * * *' })).json().schedule;
    const res = await call('PUT', `${base()}/${row.id}`, ownerJwt, { cron_expression: '30 */6 * * *', timezone: 'Asia/Tokyo', description: 'four times a day', max_retries: 1 });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().schedule).toMatchObject({ ...row, cron_expression: '30 */6 * * *', timezone: 'Asia/Tokyo', description: 'four times a day', max_retries: 1, updated_at: expect.any(String) });
    const temporal = await describeTemporalSchedule(stack, row.id);
    expect(temporal?.spec.timezone).toBe('Asia/Tokyo');
    expect(temporal?.spec.calendars?.[0]).toMatchObject({ minute: [{ start: 30, end: 30 }], hour: [{ start: 0, end: 18, step: 6 }] });
    const paused = await call('PUT', `${base()}/${row.id}`, ownerJwt, { enabled: false });
    expect(paused.json().schedule.enabled).toBe(false);
    expect((await describeTemporalSchedule(stack, row.id))?.state.paused).toBe(true);
  });

  it('PUT refuses an empty cron (Cron expression empty), bad cron, bad timezone and a too-frequent cron; nothing changes', async () => {
    const row = (await create({ name: uniqueName(), cron_expression: '0 3 * * *' })).json().schedule;
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ cron_expression: '' }, 'Cron expression empty'],
      [{ cron_expression: '61 * * * *' }, 'Cron expression invalid'],
      [{ timezone: 'Nowhere/Special' }, 'Timezone invalid'],
      [{ cron_expression: '*/1 * * * *' }, 'execution frequency too high'],
      [{ deployment_id: randomUUID() }, 'deployment does not exist or does not belong to the project'],
    ];
    for (const [body, error] of cases) {
      const res = await call('PUT', `${base()}/${row.id}`, ownerJwt, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error).toBe(error);
    }
    expect((await call('GET', `${base()}/${row.id}`, ownerJwt)).json().schedule).toEqual(row);
  });

  it('enabled-task quota: 409 schedule_count_limit on create and on re-enable; disabled ones do not count', async () => {
    const team = await make.team(owner.id, 'Small');
    const project = (await createProject(stack.db, { teamId: team.id, name: 'Small' })).id;
    await setQuota({ free: { maxEnabled: 2, minIntervalSeconds: 300 } });
    try {
      const a = (await create({ name: 'a', cron_expression: '0 3 * * *' }, ownerJwt, project)).json().schedule;
      expect((await create({ name: 'b', cron_expression: '0 3 * * *' }, ownerJwt, project)).statusCode).toBe(201);
      const before = await rowCount();
      const third = await create({ name: 'c', cron_expression: '0 3 * * *' }, ownerJwt, project);
      expect(third.statusCode).toBe(409);
      expect(third.json()).toMatchObject({ error: 'enabled-task quota reached', code: 'schedule_count_limit', maxEnabled: 2 });
      expect(await rowCount()).toBe(before);
      // A disabled one fits; enabling it is refused until a slot frees up.
      const c = (await create({ name: 'c', cron_expression: '0 3 * * *', enabled: false }, ownerJwt, project)).json().schedule;
      const reEnable = await call('PUT', `/projects/${project}/schedules/${c.id}`, ownerJwt, { enabled: true });
      expect(reEnable.statusCode).toBe(409);
      expect(reEnable.json().code).toBe('schedule_count_limit');
      expect((await stack.db.selectFrom('schedules').select('enabled').where('id', '=', c.id).executeTakeFirstOrThrow()).enabled).toBe(false);
      expect((await describeTemporalSchedule(stack, c.id))?.state.paused).toBe(true);
      await call('PUT', `/projects/${project}/schedules/${a.id}`, ownerJwt, { enabled: false });
      expect((await call('PUT', `/projects/${project}/schedules/${c.id}`, ownerJwt, { enabled: true })).statusCode).toBe(200);
    } finally {
      await setQuota({ free: { maxEnabled: 100, minIntervalSeconds: 300 } });
    }
  });

  it('the plan decides: pro allows one minute; a changed setting applies to the next check', async () => {
    const team = await make.team(owner.id, 'Pro');
    await stack.db.updateTable('teams').set({ plan_code: 'pro' }).where('id', '=', team.id).execute();
    const project = (await createProject(stack.db, { teamId: team.id, name: 'Pro' })).id;
    expect((await create({ name: 'minutely', cron_expression: '*/1 * * * *' }, ownerJwt, project)).statusCode).toBe(201);
    const seconds = await create({ name: 'every-2s', cron_expression: '*/2 * * * * *' }, ownerJwt, project);
    expect(seconds.json()).toMatchObject({ code: 'schedule_interval_limit', minIntervalSeconds: 60 });
    await stack.db.updateTable('teams').set({ plan_code: 'business' }).where('id', '=', team.id).execute();
    await setQuota({ free: { maxEnabled: 100, minIntervalSeconds: 300 }, business: { maxEnabled: 5, minIntervalSeconds: 3600 } });
    try {
      const hourlyOnly = await create({ name: 'half-hourly', cron_expression: '*/30 * * * *' }, ownerJwt, project);
      expect(hourlyOnly.json()).toMatchObject({ code: 'schedule_interval_limit' });
    } finally {
      await setQuota({ free: { maxEnabled: 100, minIntervalSeconds: 300 } });
    }
  });

  it('DELETE soft-deletes and disables, removes the Temporal Schedule; the schedule then answers 404 task does not exist', async () => {
    const row = (await create({ name: uniqueName(), cron_expression: '0 3 * * *' })).json().schedule;
    const res = await call('DELETE', `${base()}/${row.id}`, ownerJwt);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ success: true });
    const stored = await stack.db.selectFrom('schedules').selectAll().where('id', '=', row.id).executeTakeFirstOrThrow();
    expect(stored.enabled).toBe(false);
    expect(stored.deleted_at).not.toBeNull();
    expect(await describeTemporalSchedule(stack, row.id)).toBeNull();
    for (const res2 of [
      await call('GET', `${base()}/${row.id}`, ownerJwt),
      await call('PUT', `${base()}/${row.id}`, ownerJwt, { enabled: true }),
      await call('DELETE', `${base()}/${row.id}`, ownerJwt),
      await call('POST', `${base()}/${row.id}/trigger`, ownerJwt),
      await call('GET', `${base()}/${row.id}/logs`, ownerJwt),
      await call('GET', `${base()}/${randomUUID()}`, ownerJwt),
      await call('GET', `${base()}/not-a-uuid`, ownerJwt),
    ]) {
      expect(res2.statusCode).toBe(404);
      expect(res2.json().error).toBe('task does not exist');
    }
    expect((await call('GET', base(), ownerJwt)).json().schedules.map((s: { id: string }) => s.id)).not.toContain(row.id);
  });

  it('a schedule of another project is not found through this project', async () => {
    const otherProject = (await createProject(stack.db, { teamId, name: 'Other' })).id;
    const row = (await create({ name: uniqueName(), cron_expression: '0 3 * * *' }, ownerJwt, otherProject)).json().schedule;
    const res = await call('GET', `${base()}/${row.id}`, ownerJwt);
    expect(res.statusCode).toBe(404);
  });

  it('POST /:id/trigger without a deployment: 400 task has no deployment', async () => {
    const row = (await create({ name: uniqueName(), cron_expression: '0 3 * * *' })).json().schedule;
    const res = await call('POST', `${base()}/${row.id}/trigger`, memberJwt);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('task has no deployment');
    expect(await stack.db.selectFrom('schedule_logs').select('id').where('schedule_id', '=', row.id).execute()).toHaveLength(0);
  });
});
