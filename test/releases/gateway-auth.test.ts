import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRIVATE_APP_MESSAGE } from '../../shared/app-runs/run-access.js';
import { RUN_BASE_COST_MILLI } from '../harness/billing.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { outputOf, releaseTenant, releaseWith, runCount } from './fixture.js';

// Spec §4.1 "Authentication rules (fail-closed)", one test per rule, and rule 5 (who pays).
describe('release gateway: fail-closed authentication', () => {
  let stack: TestStack;
  let make: ReturnType<typeof credentialFactory>;
  let tenant: Awaited<ReturnType<typeof releaseTenant>>;
  let other: Awaited<ReturnType<ReturnType<typeof credentialFactory>['fundedTenant']>>;
  /** requireAuth (default): /open is skipAuth on the public app, /hidden skipAuth on the private one, /run needs auth (public). */
  let locked: Awaited<ReturnType<typeof releaseWith>>;
  /** requireAuth false: /run on the public app, /secret on the private one. */
  let open: Awaited<ReturnType<typeof releaseWith>>;

  const call = (url: string, headers: Record<string, string> = {}, body: object = { name: 'Ada' }) =>
    stack.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', ...headers }, payload: JSON.stringify(body) });
  const balanceOf = async (teamId: string) =>
    (await stack.db.selectFrom('credit_balances').select('balance_milli').where('team_id', '=', teamId).executeTakeFirstOrThrow()).balance_milli;
  /** The request fails with exactly this status and `error`, and starts no run. */
  const refused = async (request: Promise<{ statusCode: number; json(): unknown; body: string }>, status: number, error: string) => {
    const before = await runCount(stack);
    const res = await request;
    expect(res.statusCode, res.body).toBe(status);
    expect(res.json()).toMatchObject({ error });
    expect(await runCount(stack)).toBe(before);
  };

  beforeAll(async () => {
    stack = await createTestStack();
    await stack.startWorker();
    make = credentialFactory(stack);
    tenant = await releaseTenant(stack);
    other = await make.fundedTenant(100_000);
    locked = await releaseWith(stack, {
      projectId: tenant.projectId, anonymousApiKeyId: tenant.releaseKey.id,
      endpoints: [
        { method: 'POST', path: '/run', deploymentId: tenant.publicApp.deploymentId },
        { method: 'POST', path: '/private', deploymentId: tenant.privateApp.deploymentId },
        { method: 'POST', path: '/open', deploymentId: tenant.publicApp.deploymentId, skipAuth: true },
        { method: 'POST', path: '/hidden', deploymentId: tenant.privateApp.deploymentId, skipAuth: true },
      ],
    });
    open = await releaseWith(stack, {
      projectId: tenant.projectId, anonymousApiKeyId: tenant.releaseKey.id, config: { requireAuth: false },
      endpoints: [
        { method: 'POST', path: '/run', deploymentId: tenant.publicApp.deploymentId },
        { method: 'POST', path: '/secret', deploymentId: tenant.privateApp.deploymentId },
      ],
    });
  });
  afterAll(() => stack?.close());

  describe('rule 1: credentials are required by default', () => {
    it('an anonymous call to an endpoint of a release that requires auth is 401', async () => {
      await refused(call(locked.url('1.0', '/run')), 401, 'Unauthorized');
    });

    it.each([
      ['missing (null)', null], ['a JSON string', 'requireAuth=false'], ['an array', [{ requireAuth: false }]],
      ['requireAuth as text', { requireAuth: 'false' }], ['empty', {}],
    ])('a %s release config means auth is required', async (_label, config) => {
      const release = await releaseWith(stack, {
        projectId: tenant.projectId, anonymousApiKeyId: tenant.releaseKey.id, config: { requireAuth: false },
        endpoints: [{ method: 'POST', path: '/run', deploymentId: tenant.publicApp.deploymentId }],
      });
      // Written as an older version or a hand edit could have left it; the API itself only stores valid configs.
      await stack.db.updateTable('releases').set({ config: JSON.stringify(config) }).where('id', '=', release.id).execute();
      await refused(call(release.url('1.0', '/run')), 401, 'Unauthorized');
    });
  });

  describe('rule 2: skipAuth endpoints are public', () => {
    it('an anonymous call to a skipAuth endpoint on a public deployment runs, even though the release requires auth', async () => {
      const res = await call(locked.url('1.0', '/open'));
      expect(res.statusCode, res.body).toBe(200);
      expect(outputOf(res.json())).toEqual({ greeting: 'hello Ada', n: 2 });
    });

    it('with requireAuth false every endpoint is anonymous-capable', async () => {
      const res = await call(open.url('1.0', '/run'));
      expect(res.statusCode, res.body).toBe(200);
    });
  });

  describe('rule 3: any credential header forces authentication, even on a skipAuth endpoint', () => {
    it('an empty Authorization header is 401', async () => {
      await refused(call(locked.url('1.0', '/open'), { authorization: '' }), 401, 'Unauthorized');
    });

    it('Authorization without a Bearer token is 401', async () => {
      await refused(call(locked.url('1.0', '/open'), { authorization: 'Basic abc' }), 401, 'Unauthorized');
    });

    it('an invalid X-API-Key is 401', async () => {
      await refused(call(locked.url('1.0', '/open'), { 'x-api-key': 'not-a-key' }), 401, 'Unauthorized');
    });

    it('an empty X-API-Key is 401', async () => {
      await refused(call(open.url('1.0', '/run'), { 'x-api-key': '' }), 401, 'Unauthorized');
    });

    it('a well-formed but unknown API key is 401', async () => {
      const unknown = (await make.apiKey(other.team.id, other.owner.id)).token;
      await stack.db.updateTable('api_keys').set({ deleted_at: new Date() }).where('team_id', '=', other.team.id).where('name', '=', 'test key').execute();
      await refused(call(locked.url('1.0', '/open'), { authorization: `Bearer ${unknown}` }), 401, 'Unauthorized');
      other = await make.fundedTenant(100_000);
    });

    it('X-Internal-Secret alone is 401 (no internal callers authenticate here)', async () => {
      await refused(call(locked.url('1.0', '/open'), { 'x-internal-secret': 'anything' }), 401, 'Unauthorized');
    });

    it('X-Internal-Api-Key-Id alone is 401', async () => {
      await refused(call(open.url('1.0', '/run'), { 'x-internal-api-key-id': tenant.releaseKey.id }), 401, 'Unauthorized');
    });

    it('an internal header next to a valid key is still 401', async () => {
      await refused(call(locked.url('1.0', '/run'), { authorization: `Bearer ${tenant.apiKey}`, 'x-internal-secret': '' }), 401, 'Unauthorized');
    });

    it('a JWT or schedule token is not a gateway credential: 401', async () => {
      await refused(call(locked.url('1.0', '/open'), { authorization: `Bearer ${await make.jwt(tenant.owner.id)}` }), 401, 'Unauthorized');
      await refused(call(locked.url('1.0', '/open'), { authorization: `Bearer ${await make.scheduleToken(tenant.team.id)}` }), 401, 'Unauthorized');
    });

    it('an OAuth token without chat:completions is 403 insufficient_scope', async () => {
      const { token } = await make.oauthToken(tenant.owner.id, ['profile:read']);
      await refused(call(locked.url('1.0', '/run'), { authorization: `Bearer ${token}` }), 403, 'insufficient_scope');
    });
  });

  describe('rule 4: anonymous access to a private deployment is 403', () => {
    it('on a skipAuth endpoint', async () => {
      await refused(call(locked.url('1.0', '/hidden')), 403, PRIVATE_APP_MESSAGE);
    });

    it('on a release with requireAuth false', async () => {
      await refused(call(open.url('1.0', '/secret')), 403, PRIVATE_APP_MESSAGE);
    });
  });

  describe('permission to a private deployment', () => {
    it('a valid key of another team is 403', async () => {
      await refused(call(locked.url('1.0', '/private'), { authorization: `Bearer ${other.apiKey}` }), 403, PRIVATE_APP_MESSAGE);
    });

    it('a key of the deployment team (Authorization or X-API-Key) runs it', async () => {
      expect((await call(locked.url('1.0', '/private'), { authorization: `Bearer ${tenant.apiKey}` })).statusCode).toBe(200);
      expect((await call(locked.url('1.0', '/hidden'), { 'x-api-key': tenant.apiKey })).statusCode).toBe(200);
    });

    it('an OAuth user of the team runs it; an outsider gets 403', async () => {
      const member = await make.oauthToken(tenant.owner.id, ['chat:completions']);
      expect((await call(locked.url('1.0', '/private'), { authorization: `Bearer ${member.token}` })).statusCode).toBe(200);
      const outsider = await make.oauthToken(other.owner.id, ['chat:completions']);
      await refused(call(locked.url('1.0', '/private'), { authorization: `Bearer ${outsider.token}` }), 403, PRIVATE_APP_MESSAGE);
    });

    it('an agent binding of the team runs it; one of another team gets 403', async () => {
      const own = await make.agentToken(tenant.team.id, tenant.owner.id, []);
      expect((await call(locked.url('1.0', '/private'), { authorization: `Bearer ${own.token}` })).statusCode).toBe(200);
      const foreign = await make.agentToken(other.team.id, other.owner.id, []);
      await refused(call(locked.url('1.0', '/private'), { authorization: `Bearer ${foreign.token}` }), 403, PRIVATE_APP_MESSAGE);
    });
  });

  describe('rule 5: who pays', () => {
    const lastRun = () => stack.db.selectFrom('runs').selectAll().orderBy('created_at', 'desc').limit(1).executeTakeFirstOrThrow();

    it('a caller key of another team pays for itself on a public endpoint; the release key is not charged', async () => {
      const [ownBefore, otherBefore] = [await balanceOf(tenant.team.id), await balanceOf(other.team.id)];
      const res = await call(locked.url('1.0', '/run'), { authorization: `Bearer ${other.apiKey}` });
      expect(res.statusCode, res.body).toBe(200);
      const run = await lastRun();
      expect(run).toMatchObject({ id: res.json().runId, team_id: other.team.id, trigger_source: 'api-key' });
      expect(run.api_key_id).not.toBe(tenant.releaseKey.id);
      expect(await balanceOf(other.team.id)).toBe(otherBefore - RUN_BASE_COST_MILLI);
      expect(await balanceOf(tenant.team.id)).toBe(ownBefore);
      const charge = await stack.db.selectFrom('credit_transactions').selectAll().where('reference', '=', `run:${run.id}`).executeTakeFirstOrThrow();
      expect(charge).toMatchObject({ team_id: other.team.id, amount_milli: -RUN_BASE_COST_MILLI });
    });

    it('a client key pays for itself on a skipAuth endpoint too (the release key pays only without credentials)', async () => {
      const res = await call(locked.url('1.0', '/open'), { 'x-api-key': other.apiKey });
      expect(res.statusCode, res.body).toBe(200);
      expect(await lastRun()).toMatchObject({ team_id: other.team.id });
    });

    it('an anonymous call is paid by the release key (its team charged, its usage counted)', async () => {
      const usage = async () => (await stack.db.selectFrom('api_keys').select('usage_credits').where('id', '=', tenant.releaseKey.id).executeTakeFirstOrThrow()).usage_credits;
      const [before, usageBefore] = [await balanceOf(tenant.team.id), await usage()];
      const res = await call(open.url('1.0', '/run'));
      expect(res.statusCode, res.body).toBe(200);
      expect(await lastRun()).toMatchObject({ id: res.json().runId, team_id: tenant.team.id, api_key_id: tenant.releaseKey.id });
      expect(await balanceOf(tenant.team.id)).toBe(before - RUN_BASE_COST_MILLI);
      expect(await usage()).toBe(usageBefore + RUN_BASE_COST_MILLI);
    });

    it('an agent pays with its binding team', async () => {
      const agent = await make.agentToken(other.team.id, other.owner.id, []);
      const res = await call(locked.url('1.0', '/run'), { authorization: `Bearer ${agent.token}` });
      expect(res.statusCode, res.body).toBe(200);
      expect(await lastRun()).toMatchObject({ team_id: other.team.id, trigger_source: 'agent', user_id: agent.agentUserId, api_key_id: null });
    });

    it('an anonymous call to a release without a configured key is 401 (nobody would pay)', async () => {
      const release = await releaseWith(stack, {
        projectId: tenant.projectId, config: { requireAuth: false },
        endpoints: [{ method: 'POST', path: '/run', deploymentId: tenant.publicApp.deploymentId }],
      });
      await refused(call(release.url('1.0', '/run')), 401, 'Unauthorized');
    });

    it('a caller whose team has no credits gets 402 insufficient_credits', async () => {
      const poor = await make.fundedTenant(0);
      await refused(call(locked.url('1.0', '/run'), { authorization: `Bearer ${poor.apiKey}` }), 402, 'insufficient_credits');
    });
  });
});
