import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Graph } from '../../shared/documents/graph.js';
import { RUN_BASE_COST_MILLI } from '../harness/billing.js';
import { createApiKey } from '../../shared/credentials/api-keys.js';
import { addTeamMember } from '../../shared/identity/service.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

// Shows what a run was given: its trigger context, the version that ran and one required input.
const graphOf = (label: string): Graph => ({
  blocks: [
    { id: 'msg', type: 'input', name: 'message', config: { valueType: 'string', required: true } },
    { id: 'source', type: 'output', name: 'source', config: { value: '{{_trigger.source}}' } },
    { id: 'binding', type: 'output', name: 'binding', config: { value: '{{_trigger.binding_id}}' } },
    { id: 'label', type: 'output', name: 'label', config: { value: label } },
    { id: 'echo', type: 'output', name: 'echo', config: { value: '{{msg}}' } },
  ],
  edges: [{ from: 'msg', to: 'echo' }],
});

type Session = { blockId: string; output: unknown };
const outputOf = (body: { sessions: Session[] }, blockId: string) => body.sessions.find((s) => s.blockId === blockId)?.output;
const NOT_FOUND = { statusCode: 404, error: 'Binding not found' };

describe('POST /api/released-app/cross-team/proxy', () => {
  let stack: TestStack;
  let make: ReturnType<typeof credentialFactory>;
  let owner: { teamId: string; userId: string; jwt: string; key: string };
  let grantee: { teamId: string; userId: string; key: string };
  let documentId: string;
  let newest: string;
  let older: string;
  let bindingId: string;

  const proxy = (payload: object, headers: Record<string, string> = { authorization: `Bearer ${grantee.key}` }) =>
    stack.app.inject({ method: 'POST', url: '/api/released-app/cross-team/proxy', headers, payload });
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const grant = async (body: object) => {
    const res = await stack.app.inject({ method: 'POST', url: `/teams/${owner.teamId}/cross-team-bindings`, headers: bearer(owner.jwt), payload: body });
    expect(res.statusCode, res.body).toBe(201);
    return res.json().binding.id as string;
  };
  const runCount = async () => (await stack.db.selectFrom('runs').select('id').execute()).length;
  const balanceOf = async (teamId: string) =>
    (await stack.db.selectFrom('credit_balances').select('balance_milli').where('team_id', '=', teamId).executeTakeFirst())?.balance_milli ?? 0;
  const chargesOf = async (teamId: string) =>
    (await stack.db.selectFrom('credit_transactions').select('id').where('team_id', '=', teamId).where('reason', '=', 'run').execute()).length;
  const expectRefused = (res: { statusCode: number; json(): { error: string } }, expected: { statusCode: number; error: string }) =>
    expect({ statusCode: res.statusCode, error: res.json().error }).toEqual(expected);

  beforeAll(async () => {
    stack = await createTestStack();
    await stack.startWorker();
    make = credentialFactory(stack);
    const o = await make.fundedTenant(100_000);
    owner = { teamId: o.team.id, userId: o.owner.id, jwt: await make.jwt(o.owner.id), key: o.apiKey };
    const g = await make.fundedTenant(100_000);
    grantee = { teamId: g.team.id, userId: g.owner.id, key: g.apiKey };
    const first = await publishDirect(stack.db, graphOf('v1.0'), { teamId: owner.teamId, publishedBy: owner.userId, visibility: 'private' });
    documentId = first.documentId;
    older = first.deploymentId;
    newest = (await publishDirect(stack.db, graphOf('v1.1'), { teamId: owner.teamId, documentId, version: [1, 1], visibility: 'private' })).deploymentId;
    bindingId = await grant({ documentId, granteeTeamId: grantee.teamId });
  });
  afterAll(() => stack?.close());

  it('runs the private app of the owner team for the grantee, which pays; `_trigger` is the binding', async () => {
    // Without the binding the grantee's key may not run the private app.
    const direct = await stack.app.inject({ method: 'POST', url: `/api/released-app/${newest}/run`, headers: bearer(grantee.key), payload: { stream: false, inputs: { message: 'x' } } });
    expect(direct.statusCode).toBe(403);

    const [ownerBalance, granteeBalance] = [await balanceOf(owner.teamId), await balanceOf(grantee.teamId)];
    const res = await proxy({ bindingId, inputs: { message: 'hi', _trigger: { source: 'forged' } } });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ documentId, status: 'completed', timedOut: false });
    expect(res.headers['x-run-id']).toBe(body.runId);
    expect([outputOf(body, 'source'), outputOf(body, 'binding'), outputOf(body, 'label'), outputOf(body, 'echo')])
      .toEqual(['cross-team', bindingId, 'v1.1', 'hi']);
    const run = await stack.db.selectFrom('runs').selectAll().where('id', '=', body.runId).executeTakeFirstOrThrow();
    expect({ team: run.team_id, source: run.trigger_source, deployment: run.deployment_id, user: run.user_id })
      .toEqual({ team: grantee.teamId, source: 'cross-team', deployment: newest, user: grantee.userId });
    expect(await balanceOf(grantee.teamId)).toBe(granteeBalance - RUN_BASE_COST_MILLI);
    expect(await balanceOf(owner.teamId)).toBe(ownerBalance);
    expect(await chargesOf(owner.teamId)).toBe(0);
    const charge = await stack.db.selectFrom('credit_transactions').selectAll().where('reference', '=', `run:${body.runId}`).executeTakeFirstOrThrow();
    expect([charge.team_id, charge.amount_milli]).toEqual([grantee.teamId, -RUN_BASE_COST_MILLI]);
  });

  it('a `version` picks an older deployment, as on the run route; an unknown or malformed one is 404', async () => {
    const res = await proxy({ bindingId, version: '1.0', inputs: { message: 'old' } });
    expect(res.statusCode, res.body).toBe(200);
    expect(outputOf(res.json(), 'label')).toBe('v1.0');
    const before = await runCount();
    expectRefused(await proxy({ bindingId, version: '2.0', inputs: { message: 'x' } }), { statusCode: 404, error: 'Deployment not found' });
    expectRefused(await proxy({ bindingId, version: 'v1', inputs: { message: 'x' } }), { statusCode: 404, error: 'Deployment not found' });
    expect(await runCount()).toBe(before);
  });

  it('a pinned binding runs only its pin', async () => {
    const grantee2 = await make.fundedTenant(100_000);
    const pinnedId = await grant({ documentId, granteeTeamId: grantee2.team.id, deploymentId: older });
    const headers = bearer(grantee2.apiKey);
    const listed = await stack.app.inject({ method: 'GET', url: '/api/released-app/cross-team/bindings', headers });
    expect(listed.json().bindings).toEqual([expect.objectContaining({ id: pinnedId, deploymentId: older, pinned: true })]);
    const res = await proxy({ bindingId: pinnedId, inputs: { message: 'p' } }, headers);
    expect(res.statusCode, res.body).toBe(200);
    expect(outputOf(res.json(), 'label')).toBe('v1.0');
    expect((await proxy({ bindingId: pinnedId, version: '1.0', inputs: { message: 'p' } }, headers)).statusCode).toBe(200);
    expectRefused(await proxy({ bindingId: pinnedId, version: '1.1', inputs: { message: 'p' } }, headers), { statusCode: 404, error: 'Deployment not found' });
  });

  it('an OAuth member of the grantee team calls it and the grantee team pays', async () => {
    const member = await make.user('member');
    await addTeamMember(stack.db, { teamId: grantee.teamId, userId: member.id, role: 'member' });
    const token = (await make.oauthToken(member.id, ['chat:completions'])).token;
    const res = await proxy({ bindingId, inputs: { message: 'oauth' } }, bearer(token));
    expect(res.statusCode, res.body).toBe(200);
    const run = await stack.db.selectFrom('runs').select(['team_id', 'user_id']).where('id', '=', res.json().runId).executeTakeFirstOrThrow();
    expect(run).toEqual({ team_id: grantee.teamId, user_id: member.id });
  });

  it('a third team, the owner team, an unknown and a malformed id all get the same 404, and no run', async () => {
    const third = await make.fundedTenant();
    const before = await runCount();
    for (const [id, headers] of [
      [bindingId, bearer(third.apiKey)], [bindingId, bearer(owner.key)],
      ['00000000-0000-4000-8000-000000000000', undefined], ['not-a-uuid', undefined],
    ] as const) {
      const res = await proxy({ bindingId: id, inputs: { message: 'x' } }, headers);
      expect(res.json()).toEqual({ error: 'Binding not found', message: 'Binding not found' });
      expect(res.statusCode).toBe(404);
    }
    expect(await runCount()).toBe(before);
  });

  it('no credential, or a JWT, is 401 Unauthorized', async () => {
    for (const headers of [{}, bearer(owner.jwt), bearer('wfk-not-a-real-key')]) {
      expectRefused(await proxy({ bindingId, inputs: { message: 'x' } }, headers), { statusCode: 401, error: 'Unauthorized' });
    }
  });

  it('input validation fails with 400 and nothing is written or charged', async () => {
    const [runs, balance] = [await runCount(), await balanceOf(grantee.teamId)];
    const res = await proxy({ bindingId, inputs: {} });
    expectRefused(res, { statusCode: 400, error: 'Input validation failed' });
    expectRefused(await proxy({ inputs: { message: 'x' } }), { statusCode: 400, error: 'invalid_request' });
    expect([await runCount(), await balanceOf(grantee.teamId)]).toEqual([runs, balance]);
  });

  it('a grantee without credits gets 402 and nothing is written; the owner is not charged instead', async () => {
    const poor = await make.user('poor');
    const poorTeam = await make.team(poor.id, 'Poor');
    const key = await make.apiKey(poorTeam.id, poor.id);
    const poorBinding = await grant({ documentId, granteeTeamId: poorTeam.id });
    const [runs, ownerBalance] = [await runCount(), await balanceOf(owner.teamId)];
    expectRefused(await proxy({ bindingId: poorBinding, inputs: { message: 'x' } }, bearer(key.token)), { statusCode: 402, error: 'insufficient_credits' });
    expect([await runCount(), await balanceOf(owner.teamId), await chargesOf(poorTeam.id)]).toEqual([runs, ownerBalance, 0]);
  });

  it("the API key's credit limit holds through the binding, and its usage counts", async () => {
    const limited = await createApiKey(stack.db, { teamId: grantee.teamId, createdBy: grantee.userId, name: 'limited', limitCredits: RUN_BASE_COST_MILLI });
    expect((await proxy({ bindingId, inputs: { message: 'x' } }, bearer(limited.token))).statusCode).toBe(200);
    const key = await stack.db.selectFrom('api_keys').select('usage_credits').where('id', '=', limited.id).executeTakeFirstOrThrow();
    expect(key.usage_credits).toBe(RUN_BASE_COST_MILLI);
    const runs = await runCount();
    expectRefused(await proxy({ bindingId, inputs: { message: 'x' } }, bearer(limited.token)), { statusCode: 403, error: 'API key credit limit exceeded' });
    expect(await runCount()).toBe(runs);
  });

  it('a revoked binding stops at once: 404 and no run', async () => {
    const revoked = await grant({ documentId, granteeTeamId: (await make.fundedTenant()).team.id });
    const other = await stack.db.selectFrom('cross_team_bindings').select('grantee_team_id').where('id', '=', revoked).executeTakeFirstOrThrow();
    const key = await make.apiKey(other.grantee_team_id, (await stack.db.selectFrom('teams').select('owner_id').where('id', '=', other.grantee_team_id).executeTakeFirstOrThrow()).owner_id);
    expect((await proxy({ bindingId: revoked, inputs: { message: 'x' } }, bearer(key.token))).statusCode).toBe(200);
    await stack.app.inject({ method: 'DELETE', url: `/teams/${owner.teamId}/cross-team-bindings/${revoked}`, headers: bearer(owner.jwt) });
    const runs = await runCount();
    expectRefused(await proxy({ bindingId: revoked, inputs: { message: 'x' } }, bearer(key.token)), NOT_FOUND);
    expect(await runCount()).toBe(runs);
  });

  it('a document without a live deployment is 404 Deployment not found', async () => {
    const lone = await publishDirect(stack.db, graphOf('gone'), { teamId: owner.teamId });
    const id = await grant({ documentId: lone.documentId, granteeTeamId: grantee.teamId });
    await stack.db.updateTable('deployments').set({ deleted_at: new Date() }).where('id', '=', lone.deploymentId).execute();
    expectRefused(await proxy({ bindingId: id, inputs: { message: 'x' } }), { statusCode: 404, error: 'Deployment not found' });
  });
});
