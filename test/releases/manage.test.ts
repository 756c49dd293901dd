import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addTeamMember } from '../../shared/identity/service.js';
import { runCli } from '../harness/cli.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { releaseTenant } from './fixture.js';

describe('release management API', () => {
  let stack: TestStack;
  let make: ReturnType<typeof credentialFactory>;
  let tenant: Awaited<ReturnType<typeof releaseTenant>>;
  let ownerJwt: string;
  let n = 0;
  const alias = () => `m-${Date.now().toString(36)}-${++n}`;

  const api = (method: 'GET' | 'POST', url: string, token: string, body?: unknown) => stack.app.inject({
    method, url, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
  const releaseCount = async () => (await stack.db.selectFrom('releases').select('id').execute()).length;
  const versionCount = async () => (await stack.db.selectFrom('release_versions').select('id').execute()).length;
  const create = async (body: object, token = ownerJwt) => api('POST', `/projects/${tenant.projectId}/releases`, token, { alias: alias(), ...body });

  beforeAll(async () => {
    stack = await createTestStack();
    make = credentialFactory(stack);
    tenant = await releaseTenant(stack);
    ownerJwt = await make.jwt(tenant.owner.id);
  });
  afterAll(() => stack?.close());

  it('creates a release, publishes 1.0 then 1.1 by default, and reads them back', async () => {
    const created = await create({ config: { requireAuth: false, rateLimit: { windowSeconds: 10, maxRequests: 3 } }, anonymousApiKeyId: tenant.releaseKey.id });
    expect(created.statusCode, created.body).toBe(201);
    const { release } = created.json();
    expect(release).toMatchObject({
      projectId: tenant.projectId, gatewayPath: `/api/released-app/r/${release.alias}`, anonymousApiKeyId: tenant.releaseKey.id, versions: [],
      effectiveConfig: { requireAuth: false, rateLimit: { windowSeconds: 10, maxRequests: 3 }, ownRateLimit: true },
    });
    const endpoints = [{ method: 'post', path: '/greet/:who', deploymentId: tenant.publicApp.deploymentId, fieldMapping: { who: 'name' } }];
    const first = await api('POST', `/releases/${release.id}/versions`, ownerJwt, { endpoints });
    expect(first.statusCode, first.body).toBe(201);
    expect(first.json().version).toMatchObject({ version: '1.0', endpoints: [{ method: 'POST', path: '/greet/:who', skipAuth: false }] });
    expect((await api('POST', `/releases/${release.id}/versions`, tenant.apiKey, { endpoints: [] })).json().version.version).toBe('1.1');

    const read = await api('GET', `/releases/${release.id}`, tenant.apiKey);
    expect(read.statusCode).toBe(200);
    expect(read.json().release.versions).toEqual(['1.1', '1.0']);
    expect(read.json().versions.map((v: { version: string }) => v.version)).toEqual(['1.1', '1.0']);
    const list = await api('GET', `/projects/${tenant.projectId}/releases`, ownerJwt);
    expect(list.json().releases.map((r: { id: string }) => r.id)).toContain(release.id);
  });

  it('an explicit version that exists is 409; a malformed one is 400', async () => {
    const { release } = (await create({})).json();
    const endpoints = [{ method: 'GET', path: '/', deploymentId: tenant.publicApp.deploymentId }];
    expect((await api('POST', `/releases/${release.id}/versions`, ownerJwt, { version: '2.0', endpoints })).statusCode).toBe(201);
    const again = await api('POST', `/releases/${release.id}/versions`, ownerJwt, { version: '2.0', endpoints });
    expect([again.statusCode, again.json().error]).toEqual([409, 'version_exists']);
    const bad = await api('POST', `/releases/${release.id}/versions`, ownerJwt, { version: 'v2', endpoints });
    expect([bad.statusCode, bad.json().error]).toEqual([400, 'invalid_version']);
  });

  describe('bad input changes nothing', () => {
    it.each([
      ['an alias with capitals', { alias: 'MyApp' }, 'invalid_alias'],
      ['an alias with a slash', { alias: 'a/b' }, 'invalid_alias'],
      ['windowSeconds 0', { config: { rateLimit: { windowSeconds: 0, maxRequests: 5 } } }, 'invalid_request'],
      ['maxRequests 1e9', { config: { rateLimit: { windowSeconds: 60, maxRequests: 1e9 } } }, 'invalid_request'],
      ['an unknown config field', { config: { requireAuth: true, public: true } }, 'invalid_request'],
    ])('create with %s is 400', async (_label, body, error) => {
      const before = await releaseCount();
      const res = await create(body);
      expect([res.statusCode, res.json().error], res.body).toEqual([400, error]);
      expect(await releaseCount()).toBe(before);
    });

    it('an anonymous key of another team is 400', async () => {
      const other = await make.fundedTenant();
      const key = await make.apiKey(other.team.id, other.owner.id);
      const before = await releaseCount();
      const res = await create({ anonymousApiKeyId: key.id });
      expect([res.statusCode, res.json().error]).toEqual([400, 'invalid_anonymous_api_key']);
      expect(await releaseCount()).toBe(before);
    });

    it('a taken alias is 409', async () => {
      const taken = (await create({})).json().release.alias;
      const res = await api('POST', `/projects/${tenant.projectId}/releases`, ownerJwt, { alias: taken });
      expect([res.statusCode, res.json().error]).toEqual([409, 'alias_taken']);
    });

    it.each([
      ['a method outside GET/POST/PUT/PATCH/DELETE', { method: 'TRACE', path: '/x' }],
      ['a path without a leading /', { method: 'GET', path: 'x' }],
      ['both deploymentId and documentId', { method: 'GET', path: '/x', deploymentId: '00000000-0000-4000-8000-000000000000', documentId: '00000000-0000-4000-8000-000000000000' }],
    ])('publish with %s is 400', async (_label, endpoint) => {
      const { release } = (await create({})).json();
      const before = await versionCount();
      const res = await api('POST', `/releases/${release.id}/versions`, ownerJwt, { endpoints: [endpoint] });
      expect(res.statusCode, res.body).toBe(400);
      expect(await versionCount()).toBe(before);
    });

    it('publish naming a deployment or document of another project is 400 invalid_endpoints', async () => {
      const elsewhere = await releaseTenant(stack);
      const { release } = (await create({})).json();
      const before = await versionCount();
      for (const target of [{ deploymentId: elsewhere.publicApp.deploymentId }, { documentId: elsewhere.publicApp.documentId }]) {
        const res = await api('POST', `/releases/${release.id}/versions`, ownerJwt, { endpoints: [{ method: 'POST', path: '/x', ...target }] });
        expect([res.statusCode, res.json().error], res.body).toEqual([400, 'invalid_endpoints']);
      }
      expect(await versionCount()).toBe(before);
    });
  });

  describe('access', () => {
    it('a team member may read but not write (403); an outsider and a foreign key see 404', async () => {
      const { release } = (await create({})).json();
      const member = await make.user('member');
      await addTeamMember(stack.db, { teamId: tenant.team.id, userId: member.id, role: 'member' });
      const memberJwt = await make.jwt(member.id);
      expect((await api('GET', `/releases/${release.id}`, memberJwt)).statusCode).toBe(200);
      const refused = await api('POST', `/releases/${release.id}/versions`, memberJwt, { endpoints: [] });
      expect([refused.statusCode, refused.json().error]).toEqual([403, 'project administrator required']);
      expect((await create({}, memberJwt)).statusCode).toBe(403);

      const other = await make.fundedTenant();
      for (const token of [await make.jwt(other.owner.id), other.apiKey]) {
        expect((await api('GET', `/releases/${release.id}`, token)).statusCode).toBe(404);
        expect((await api('POST', `/releases/${release.id}/versions`, token, { endpoints: [] })).statusCode).toBe(404);
        expect((await api('GET', `/projects/${tenant.projectId}/releases`, token)).statusCode).toBe(404);
        expect((await create({}, token)).statusCode).toBe(404);
      }
    });

    it('OAuth and agent tokens cannot manage releases', async () => {
      const oauth = await make.oauthToken(tenant.owner.id, ['chat:completions']);
      const agent = await make.agentToken(tenant.team.id, tenant.owner.id, ['* /**']);
      for (const token of [oauth.token, agent.token]) expect((await api('GET', `/projects/${tenant.projectId}/releases`, token)).statusCode).toBe(403);
    });
  });
});

// Each CLI call is a process (~1 s): these cover the command wiring; the API suite covers the rules.
describe('CLI: release create and release publish', () => {
  let stack: TestStack;
  let tenant: Awaited<ReturnType<typeof releaseTenant>>;
  let dir: string;
  beforeAll(async () => {
    stack = await createTestStack();
    tenant = await releaseTenant(stack);
    dir = await mkdtemp(path.join(os.tmpdir(), 'wfapp-release-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
    await stack?.close();
  });

  it('creates a release and publishes its endpoints file, printing one JSON object each', async () => {
    const alias = `cli-${Date.now().toString(36)}`;
    const created = await runCli([
      'release', 'create', '--project', tenant.projectId, '--alias', alias, '--config', '{"requireAuth":false}', '--anonymous-api-key', tenant.releaseKey.id,
    ], stack.env);
    expect(created.code, created.stderr).toBe(0);
    expect(created.json).toEqual({ id: expect.any(String), alias, gatewayPath: `/api/released-app/r/${alias}` });
    const row = await stack.db.selectFrom('releases').selectAll().where('id', '=', created.json!.id as string).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ alias, config: { requireAuth: false }, anonymous_api_key_id: tenant.releaseKey.id, created_by: null });

    const file = path.join(dir, 'endpoints.json');
    await writeFile(file, JSON.stringify([{ method: 'POST', path: '/run', deploymentId: tenant.publicApp.deploymentId }]));
    const published = await runCli(['release', 'publish', '--release', created.json!.id as string, '--endpoints', file], stack.env);
    expect(published.code, published.stderr).toBe(0);
    expect(published.json).toEqual({ releaseId: created.json!.id, version: '1.0' });
  });

  it('refuses bad input with a JSON error and writes nothing', async () => {
    const bad = await runCli(['release', 'create', '--project', tenant.projectId, '--alias', 'Bad Alias'], stack.env);
    expect(bad.code).not.toBe(0);
    expect(bad.error).toMatchObject({ error: 'invalid_alias' });
    const missing = await runCli(['release', 'publish', '--release', tenant.projectId], stack.env);
    expect(missing.error).toMatchObject({ error: 'missing_flag', message: 'Missing required flag --endpoints' });
    expect(await stack.db.selectFrom('releases').select('id').where('alias', '=', 'Bad Alias').execute()).toEqual([]);
  });
});
