import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addTeamMember } from '../../shared/identity/service.js';
import { createKeyRing } from '../../shared/secrets/key-ring.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

const KEY = 'sk-acme-secret-value-7Q2z';

describe('team LLM providers API', () => {
  let stack: TestStack;
  let teamId: string;
  let owner: string;
  let admin: string;
  let member: string;
  let outsider: string;
  let apiKey: string;

  const call = (method: 'GET' | 'PUT' | 'DELETE', url: string, token: string, payload?: object) =>
    stack.app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload ? { payload } : {}) });
  const put = (name: string, token: string, body: object, team = teamId) => call('PUT', `/teams/${team}/llm-providers/${name}`, token, body);

  beforeAll(async () => {
    stack = await createTestStack();
    const make = credentialFactory(stack);
    const ownerUser = await make.user('owner');
    const team = await make.team(ownerUser.id);
    teamId = team.id;
    const adminUser = await make.user('admin');
    const memberUser = await make.user('member');
    await addTeamMember(stack.db, { teamId, userId: adminUser.id, role: 'admin' });
    await addTeamMember(stack.db, { teamId, userId: memberUser.id, role: 'member' });
    owner = await make.jwt(ownerUser.id);
    admin = await make.jwt(adminUser.id);
    member = await make.jwt(memberUser.id);
    outsider = await make.jwt((await make.user('outsider')).id);
    apiKey = (await make.apiKey(teamId, ownerUser.id)).token;
  });
  afterAll(() => stack?.close());

  it('PUT creates, GET lists without the key, PUT replaces, DELETE removes', async () => {
    const created = await put('acme', owner, { baseUrl: 'https://llm.acme.example/v1', apiKey: KEY });
    expect(created.statusCode, created.body).toBe(200);
    expect(created.headers['cache-control']).toBe('no-store');
    expect(created.json()).toEqual({
      provider: { name: 'acme', baseUrl: 'https://llm.acme.example/v1', hasApiKey: true, apiKeyPreview: '7Q2z', updatedAt: expect.any(String) },
    });
    expect(created.body).not.toContain(KEY);

    // An admin may manage them too; a short key gets no preview.
    expect((await put('default', admin, { baseUrl: 'http://10.0.0.5:8080/v1', apiKey: 'short' })).json().provider)
      .toMatchObject({ name: 'default', hasApiKey: true, apiKeyPreview: null });

    const listed = await call('GET', `/teams/${teamId}/llm-providers`, owner);
    expect(listed.statusCode).toBe(200);
    expect(listed.json().providers.map((p: { name: string }) => p.name)).toEqual(['acme', 'default']);
    expect(listed.body).not.toContain(KEY);
    expect(listed.body).not.toContain('v1:');
    expect(Object.keys(listed.json().providers[0]).sort()).toEqual(['apiKeyPreview', 'baseUrl', 'hasApiKey', 'name', 'updatedAt']);

    const replaced = await put('acme', owner, { baseUrl: 'https://other.acme.example/v1', apiKey: 'sk-replacement-key-ABCD' });
    expect(replaced.json().provider).toMatchObject({ baseUrl: 'https://other.acme.example/v1', apiKeyPreview: 'ABCD' });
    expect(Date.parse(replaced.json().provider.updatedAt)).toBeGreaterThanOrEqual(Date.parse(created.json().provider.updatedAt));

    expect((await call('DELETE', `/teams/${teamId}/llm-providers/acme`, admin)).json()).toEqual({ success: true });
    const missing = await call('DELETE', `/teams/${teamId}/llm-providers/acme`, owner);
    expect([missing.statusCode, missing.json().error]).toEqual([404, 'not_found']);
    expect((await call('GET', `/teams/${teamId}/llm-providers`, owner)).json().providers.map((p: { name: string }) => p.name)).toEqual(['default']);
  });

  it('stores the key sealed (not the plaintext), opening to it with the server key ring', async () => {
    await put('sealed', owner, { baseUrl: 'https://llm.example/v1', apiKey: KEY });
    const row = await stack.db.selectFrom('team_llm_providers').selectAll().where('team_id', '=', teamId).where('name', '=', 'sealed').executeTakeFirstOrThrow();
    expect(row.api_key_sealed).not.toContain(KEY);
    expect(row.api_key_sealed).toMatch(new RegExp(`^v1:${stack.deps.secrets.currentKeyId}:`));
    expect(JSON.stringify(row)).not.toContain(KEY);
    expect(stack.deps.secrets.open(row.api_key_sealed, `team_llm_providers:${teamId}:sealed`)).toBe(KEY);
    // Bound to its row: the same sealed value does not open as another team's or provider's.
    expect(() => stack.deps.secrets.open(row.api_key_sealed, `team_llm_providers:${teamId}:acme`)).toThrow();
    // And not with a different key.
    expect(() => createKeyRing(randomBytes(32)).open(row.api_key_sealed, `team_llm_providers:${teamId}:sealed`)).toThrow(/neither SECRETS_KEY/);
  });

  it('a member gets 403, a non-member 404, a machine credential 403 (teamAdmin: JWT only)', async () => {
    const body = { baseUrl: 'https://llm.example/v1', apiKey: KEY };
    for (const res of [await put('x', member, body), await call('GET', `/teams/${teamId}/llm-providers`, member), await call('DELETE', `/teams/${teamId}/llm-providers/sealed`, member)]) {
      expect([res.statusCode, res.json().error]).toEqual([403, 'Forbidden']);
    }
    for (const res of [await put('x', outsider, body), await call('GET', `/teams/${teamId}/llm-providers`, outsider), await put('x', owner, body, '00000000-0000-4000-8000-000000000000'), await put('x', owner, body, 'not-a-uuid')]) {
      expect([res.statusCode, res.json().error]).toEqual([404, 'Team not found']);
    }
    const viaKey = await put('x', apiKey, body);
    expect([viaKey.statusCode, viaKey.json().error]).toEqual([403, 'This endpoint only accepts JWT authentication']);
    expect((await call('GET', `/teams/${teamId}/llm-providers`, apiKey)).statusCode).toBe(403);
    const anonymous = await stack.app.inject({ method: 'GET', url: `/teams/${teamId}/llm-providers` });
    expect(anonymous.statusCode).toBe(401);
    expect(await stack.db.selectFrom('team_llm_providers').select('name').where('name', '=', 'x').execute()).toEqual([]);
  });

  it('400 for a base URL that is not http(s), a bad name, or a missing key', async () => {
    for (const baseUrl of ['not a url', 'ftp://llm.example/v1', 'file:///etc/passwd', 'javascript:alert(1)']) {
      const res = await put('bad', owner, { baseUrl, apiKey: KEY });
      expect([res.statusCode, res.json().error], baseUrl).toEqual([400, 'invalid_request']);
    }
    for (const name of ['Acme', '-acme', 'a'.repeat(41), 'ac.me']) {
      const res = await put(encodeURIComponent(name), owner, { baseUrl: 'https://llm.example/v1', apiKey: KEY });
      expect([res.statusCode, res.json().error], name).toEqual([400, 'invalid_request']);
    }
    expect((await put('bad', owner, { baseUrl: 'https://llm.example/v1' })).statusCode).toBe(400);
    expect((await put('bad', owner, { baseUrl: 'https://llm.example/v1', apiKey: '' })).statusCode).toBe(400);
    expect(await stack.db.selectFrom('team_llm_providers').select('name').where('name', '=', 'bad').execute()).toEqual([]);
  });
});

describe('team LLM providers without SECRETS_KEY in production', () => {
  let stack: TestStack;
  beforeAll(async () => { stack = await createTestStack({ NODE_ENV: 'production', SECRETS_KEY: '' }); });
  afterAll(() => stack?.close());

  it('PUT is refused with 503 secrets_key_missing; nothing is stored', async () => {
    const make = credentialFactory(stack);
    const user = await make.user('owner');
    const team = await make.team(user.id);
    const res = await stack.app.inject({
      method: 'PUT', url: `/teams/${team.id}/llm-providers/acme`, headers: { authorization: `Bearer ${await make.jwt(user.id)}` },
      payload: { baseUrl: 'https://llm.example/v1', apiKey: KEY },
    });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ error: 'secrets_key_missing', message: expect.stringContaining('SECRETS_KEY') });
    expect(await stack.db.selectFrom('team_llm_providers').selectAll().execute()).toEqual([]);
  });
});
