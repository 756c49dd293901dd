import { SignJWT, UnsecuredJWT, generateKeyPair } from 'jose';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScheduleTokens } from '../../shared/credentials/schedule-tokens.js';
import { generateToken } from '../../shared/credentials/tokens.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

describe('authentication: every credential kind, and the 401s of §5.4', () => {
  let stack: TestStack;
  let make: ReturnType<typeof credentialFactory>;
  let owner: { id: string; email: string };
  let teamId: string;
  const get = (url: string, token: string) => stack.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });
  const ensure = (token: string) => stack.app.inject({ method: 'POST', url: '/my/default-project/ensure', headers: { authorization: `Bearer ${token}` }, payload: {} });
  const expect401 = async (response: Promise<{ statusCode: number; json(): { error: string } }>, message: string) => {
    const res = await response;
    expect([res.statusCode, res.json().error]).toEqual([401, message]);
  };

  beforeAll(async () => {
    stack = await createTestStack();
    make = credentialFactory(stack);
    owner = await make.user('owner');
    teamId = (await make.team(owner.id)).id;
  });
  afterAll(() => stack?.close());

  describe('GET /my answers per credential kind (§4.4)', () => {
    it('jwt: userId, email, metadata', async () => {
      await stack.db.updateTable('users').set({ metadata: JSON.stringify({ display_name: 'Owner' }) }).where('id', '=', owner.id).execute();
      const res = await get('/my', await make.jwt(owner.id));
      expect(res.json()).toEqual({ userId: owner.id, email: owner.email, metadata: { display_name: 'Owner' } });
    });
    it('api-key: the key creator, team and key id', async () => {
      const key = await make.apiKey(teamId, owner.id);
      expect((await get('/my', key.token)).json()).toEqual({ userId: owner.id, teamId, apiKeyId: key.id });
    });
    it('agent with a `GET /my` grant: agent user, team, binding', async () => {
      const agent = await make.agentToken(teamId, owner.id, ['GET /my']);
      expect((await get('/my', agent.token)).json()).toEqual({ userId: agent.agentUserId, teamId, bindingId: agent.bindingId });
    });
    it('agent without the grant: 403 Permission denied', async () => {
      const agent = await make.agentToken(teamId, owner.id, ['POST /my']);
      const res = await get('/my', agent.token);
      expect(res.statusCode).toBe(403);
      expect(res.json().error).toMatch(/^Permission denied: GET \/my/);
    });
    it('schedule: schedule, team, deployment', async () => {
      const token = await make.scheduleToken(teamId);
      const body = (await get('/my', token)).json();
      expect(body).toEqual({ scheduleId: expect.any(String), teamId, deploymentId: expect.any(String) });
    });
  });

  describe('API keys: 401 Invalid API key', () => {
    it('bad checksum (refused before any lookup)', async () => {
      const token = generateToken('apiKey');
      await expect401(get('/my', `${token.slice(0, -1)}${token.at(-1) === 'A' ? 'B' : 'A'}`), 'Invalid API key');
    });
    it('unknown key of a valid shape', () => expect401(get('/my', generateToken('apiKey')), 'Invalid API key'));
    it('deleted key', async () => {
      const key = await make.apiKey(teamId, owner.id);
      await stack.db.updateTable('api_keys').set({ deleted_at: new Date() }).where('id', '=', key.id).execute();
      await expect401(get('/my', key.token), 'Invalid API key');
    });
    it('a row with a past expires_at is honoured', async () => {
      const key = await make.apiKey(teamId, owner.id);
      await stack.db.updateTable('api_keys').set({ expires_at: new Date(Date.now() - 1000) }).where('id', '=', key.id).execute();
      await expect401(get('/my', key.token), 'Invalid API key');
    });
    it('key of a deleted team', async () => {
      const other = await make.team(owner.id, 'Doomed');
      const key = await make.apiKey(other.id, owner.id);
      await stack.db.updateTable('teams').set({ deleted_at: new Date() }).where('id', '=', other.id).execute();
      await expect401(get('/my', key.token), 'Invalid API key');
    });
  });

  describe('identity-provider JWTs: 401 Invalid token', () => {
    const claims = () => ({ iss: stack.config.JWT_ISSUER, aud: stack.config.JWT_AUDIENCE });
    it('wrong signature', async () => {
      const { privateKey } = await generateKeyPair('ES256');
      const forged = await new SignJWT({}).setProtectedHeader({ alg: 'ES256', kid: stack.deps.idp.publicJwks.keys[0]!.kid })
        .setSubject(owner.id).setIssuer(claims().iss).setAudience(claims().aud).setExpirationTime('5m').sign(privateKey);
      await expect401(get('/my', forged), 'Invalid token');
    });
    it('wrong issuer and wrong audience', async () => {
      const { createIdentityProvider } = await import('../../shared/credentials/identity-provider.js');
      for (const override of [{ JWT_ISSUER: 'https://elsewhere' }, { JWT_AUDIENCE: 'another-service' }]) {
        const other = await createIdentityProvider({ ...stack.config, ...override });
        await expect401(get('/my', await other.issue(owner.id, 60)), 'Invalid token');
      }
    });
    it('alg: none', async () => {
      const unsigned = new UnsecuredJWT({}).setSubject(owner.id).setIssuer(claims().iss).setAudience(claims().aud).setExpirationTime('5m').encode();
      await expect401(get('/my', unsigned), 'Invalid token');
    });
    it('expired', async () => {
      const token = await stack.deps.idp.issue(owner.id, 1);
      await new Promise((r) => setTimeout(r, 2100));
      await expect401(get('/my', token), 'Invalid token');
    });
    it('a subject that is not one of our users, and garbage', async () => {
      await expect401(get('/my', await stack.deps.idp.issue('00000000-0000-4000-8000-000000000000', 60)), 'Invalid token');
      await expect401(get('/my', await stack.deps.idp.issue('not-a-uuid', 60)), 'Invalid token');
      await expect401(get('/my', 'definitely.not.a-jwt'), 'Invalid token');
    });
  });

  describe('schedule tokens: 401 Invalid token', () => {
    it('expired', async () => {
      const token = await make.scheduleToken(teamId, 1);
      await new Promise((r) => setTimeout(r, 2100));
      await expect401(get('/my', token), 'Invalid token');
    });
    it('signed by another service key', async () => {
      const { mkdtemp } = await import('node:fs/promises');
      const os = await import('node:os');
      const other = await createScheduleTokens(await mkdtemp(`${os.tmpdir()}/other-service-`));
      const token = await other.issue({ scheduleId: 's', teamId, deploymentId: 'd' }, 60);
      await expect401(get('/my', token), 'Invalid token');
    });
  });

  describe('OAuth access tokens (§5.4)', () => {
    it('bad checksum and unknown: Invalid or revoked OAuth token', async () => {
      await expect401(ensure(`${generateToken('oauthAccess').slice(0, -6)}000000`), 'Invalid or revoked OAuth token');
      await expect401(ensure(generateToken('oauthAccess')), 'Invalid or revoked OAuth token');
    });
    it('revoked', async () => {
      const t = await make.oauthToken(owner.id, ['mobile:full']);
      await stack.db.updateTable('oauth_tokens').set({ revoked_at: new Date() }).where('id', '=', t.tokenId).execute();
      await expect401(ensure(t.token), 'Invalid or revoked OAuth token');
    });
    it('expired: OAuth token has expired', async () => {
      const t = await make.oauthToken(owner.id, ['mobile:full'], { expiresInSeconds: -1 });
      await expect401(ensure(t.token), 'OAuth token has expired');
    });
    it('app disabled or deleted: every token of it stops at once', async () => {
      for (const column of ['disabled_at', 'deleted_at'] as const) {
        const t = await make.oauthToken(owner.id, ['mobile:full']);
        expect((await ensure(t.token)).statusCode).toBe(200);
        await stack.db.updateTable('oauth_apps').set({ [column]: sql`now()` }).where('id', '=', t.appId).execute();
        await expect401(ensure(t.token), 'Invalid or revoked OAuth token');
      }
    });
    it('a refresh token is not an access token', () => expect401(ensure(generateToken('oauthRefresh')), 'Invalid or revoked OAuth token'));
  });

  describe('agent tokens: 401 Invalid token', () => {
    it('bad checksum, unknown, revoked (hash null), deleted binding', async () => {
      await expect401(get('/my', `${generateToken('agent').slice(0, -6)}zzzzzz`), 'Invalid token');
      await expect401(get('/my', generateToken('agent')), 'Invalid token');
      const revoked = await make.agentToken(teamId, owner.id, ['GET /my']);
      await stack.db.updateTable('agent_bindings').set({ token_hash: null, revoked_at: new Date() }).where('id', '=', revoked.bindingId).execute();
      await expect401(get('/my', revoked.token), 'Invalid token');
      const deleted = await make.agentToken(teamId, owner.id, ['GET /my']);
      await stack.db.updateTable('agent_bindings').set({ deleted_at: new Date() }).where('id', '=', deleted.bindingId).execute();
      await expect401(get('/my', deleted.token), 'Invalid token');
    });
  });
});

describe('schedule-token issue (CLI)', () => {
  let stack: TestStack;
  beforeAll(async () => { stack = await createTestStack(); });
  afterAll(() => stack?.close());

  it('issues a token for a stored schedule that the API accepts as that schedule; a missing flag or schedule is named', async () => {
    const { runCli } = await import('../harness/cli.js');
    const { credentialFactory } = await import('../harness/credentials.js');
    const { publishDirect } = await import('../harness/apps.js');
    const make = credentialFactory(stack);
    const owner = await make.user('owner');
    const team = await make.team(owner.id);
    const { deploymentId } = await publishDirect(stack.db, { blocks: [{ id: 'o', type: 'output', name: 'o', config: { value: 'x' } }], edges: [] }, { teamId: team.id });
    const projectId = (await stack.db.selectFrom('deployments').select('project_id').where('id', '=', deploymentId).executeTakeFirstOrThrow()).project_id;
    const scheduleId = crypto.randomUUID();
    await stack.db.insertInto('schedules').values({
      id: scheduleId, project_id: projectId, team_id: team.id, deployment_id: deploymentId, name: 'job', cron_expression: '0 3 * * *', timeout_ms: 60_000,
    }).execute();
    const res = await runCli(['schedule-token', 'issue', '--schedule', scheduleId], stack.env);
    expect(res.code).toBe(0);
    const my = await stack.app.inject({ method: 'GET', url: '/my', headers: { authorization: `Bearer ${res.json!.token as string}` } });
    expect(my.json()).toEqual({ scheduleId, teamId: team.id, deploymentId });
    const bad = await runCli(['schedule-token', 'issue'], stack.env);
    expect(bad.code).not.toBe(0);
    expect(bad.error).toMatchObject({ message: 'Missing required flag --schedule' });
    const missing = await runCli(['schedule-token', 'issue', '--schedule', crypto.randomUUID()], stack.env);
    expect(missing.code).not.toBe(0);
    expect(missing.error).toMatchObject({ error: 'not_found' });
  });
});
