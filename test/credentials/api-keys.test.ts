import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertWithinCreditLimit } from '../../shared/credentials/api-keys.js';
import { sha256Hex } from '../../shared/crypto.js';
import { addTeamMember } from '../../shared/identity/service.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

describe('team API keys', () => {
  let stack: TestStack;
  let make: ReturnType<typeof credentialFactory>;
  let ownerJwt: string;
  let teamId: string;
  const call = (method: 'GET' | 'POST' | 'DELETE', url: string, token: string, payload?: object) =>
    stack.app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload ? { payload } : {}) });
  const keyCount = async () => (await stack.db.selectFrom('api_keys').select('id').execute()).length;

  beforeAll(async () => {
    stack = await createTestStack();
    make = credentialFactory(stack);
    const owner = await make.user('owner');
    teamId = (await make.team(owner.id)).id;
    ownerJwt = await make.jwt(owner.id);
  });
  afterAll(() => stack?.close());

  it('the owner creates a key: plaintext once, only its hash stored, and it authenticates', async () => {
    const res = await call('POST', `/teams/${teamId}/api-keys`, ownerJwt, { name: 'ci', description: 'for CI', limitCredits: 5000 });
    expect(res.statusCode).toBe(201);
    expect(res.headers['cache-control']).toBe('no-store');
    const { apiKey, token } = res.json();
    expect(token).toMatch(/^wfk-/);
    expect(apiKey).toMatchObject({ name: 'ci', description: 'for CI', limitCredits: 5000, usageCredits: 0 });
    const row = await stack.db.selectFrom('api_keys').selectAll().where('id', '=', apiKey.id).executeTakeFirstOrThrow();
    expect(row.key_hash).toBe(sha256Hex(token));
    expect(JSON.stringify(row)).not.toContain(token);
    expect((await call('GET', '/my', token)).json()).toMatchObject({ teamId, apiKeyId: apiKey.id });
  });

  it('lists keys without secrets; deleting one stops it at once', async () => {
    const { token, apiKey } = (await call('POST', `/teams/${teamId}/api-keys`, ownerJwt, { name: 'temp' })).json();
    const list = (await call('GET', `/teams/${teamId}/api-keys`, ownerJwt)).json();
    expect(list.items.map((k: { id: string }) => k.id)).toContain(apiKey.id);
    expect(JSON.stringify(list)).not.toMatch(/wfk-|key_hash|[0-9a-f]{64}/);
    const del = await call('DELETE', `/teams/${teamId}/api-keys/${apiKey.id}`, ownerJwt);
    expect(del.json()).toEqual({ success: true });
    expect((await call('GET', '/my', token)).statusCode).toBe(401);
    expect((await call('DELETE', `/teams/${teamId}/api-keys/${apiKey.id}`, ownerJwt)).statusCode).toBe(404);
    const after = (await call('GET', `/teams/${teamId}/api-keys`, ownerJwt)).json();
    expect(after.items.map((k: { id: string }) => k.id)).not.toContain(apiKey.id);
  });

  describe('bad input: a clear 4xx and nothing written', () => {
    it.each([
      ['expires_at is refused', { name: 'x', expires_at: '2030-01-01T00:00:00Z' }, 'expires_at_not_accepted'],
      ['expiresAt is refused', { name: 'x', expiresAt: '2030-01-01T00:00:00Z' }, 'expires_at_not_accepted'],
      ['missing name', { description: 'x' }, 'invalid_request'],
      ['negative limit', { name: 'x', limitCredits: -1 }, 'invalid_request'],
      ['fractional limit', { name: 'x', limitCredits: 1.5 }, 'invalid_request'],
    ])('%s', async (_name, body, error) => {
      const before = await keyCount();
      const res = await call('POST', `/teams/${teamId}/api-keys`, ownerJwt, body);
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toBe(error);
      expect(await keyCount()).toBe(before);
    });

    it('a member who is not the owner gets 403; a stranger gets 404; an API key gets 403', async () => {
      const member = await make.user('member');
      await addTeamMember(stack.db, { teamId, userId: member.id, role: 'admin' });
      const stranger = await make.user('stranger');
      const before = await keyCount();
      const asAdmin = await call('POST', `/teams/${teamId}/api-keys`, await make.jwt(member.id), { name: 'x' });
      expect([asAdmin.statusCode, asAdmin.json().error]).toEqual([403, 'Forbidden']);
      const asStranger = await call('POST', `/teams/${teamId}/api-keys`, await make.jwt(stranger.id), { name: 'x' });
      expect([asStranger.statusCode, asStranger.json().error]).toEqual([404, 'Team not found']);
      const key = await make.apiKey(teamId, (await stack.db.selectFrom('teams').select('owner_id').where('id', '=', teamId).executeTakeFirstOrThrow()).owner_id);
      const asKey = await call('POST', `/teams/${teamId}/api-keys`, key.token, { name: 'x' });
      expect([asKey.statusCode, asKey.json().error]).toEqual([403, 'This endpoint only accepts JWT authentication']);
      expect(await keyCount()).toBe(before + 1); // only the key this test made directly
    });

    it("another team's key cannot be deleted through this team (404) and keeps working", async () => {
      const otherOwner = await make.user('other');
      const otherTeam = await make.team(otherOwner.id);
      const otherKey = await make.apiKey(otherTeam.id, otherOwner.id);
      const res = await call('DELETE', `/teams/${teamId}/api-keys/${otherKey.id}`, ownerJwt);
      expect([res.statusCode, res.json().error]).toEqual([404, 'API key not found']);
      expect((await call('GET', '/my', otherKey.token)).statusCode).toBe(200);
    });
  });

  it('usage at or over the limit is 403 API key credit limit exceeded; no limit means unlimited', () => {
    expect(() => assertWithinCreditLimit({ limitCredits: 1000, usageCredits: 999 })).not.toThrow();
    expect(() => assertWithinCreditLimit({ limitCredits: 1000, usageCredits: 1000 })).toThrow(expect.objectContaining({ status: 403, error: 'API key credit limit exceeded' }));
    expect(() => assertWithinCreditLimit({ limitCredits: null, usageCredits: 10 ** 12 })).not.toThrow();
  });
});
