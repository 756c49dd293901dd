import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { expectUnchanged, newApp, newUser, obtainTokens } from './oauth-helpers.js';

/** Spec §4.4 and §7.4 for the OAuth rows of /my/credentials, checked against the routes (issue 45, conformance). */
describe('OAuth authorizations of the caller: spec §2.8, §4.4, §7.4', () => {
  let stack: TestStack;
  beforeAll(async () => { stack = await createTestStack(); });
  afterAll(() => stack?.close());

  const asUser = async (userId: string) => ({ authorization: `Bearer ${await stack.deps.idp.issue(userId, 600)}` });
  const userinfo = (token: string) => stack.app.inject({ method: 'GET', url: '/oauth/userinfo', headers: { authorization: `Bearer ${token}` } });

  it('an item has exactly the fields of §2.8', async () => {
    const user = await newUser(stack.db);
    const app = await newApp(stack, { name: 'Fields' });
    await obtainTokens(stack, app, user.id, 'profile:read');
    const res = await stack.app.inject({ method: 'GET', url: '/my/credentials/oauth-authorizations', headers: await asUser(user.id) });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      items: [{ app_id: app.appId, app_name: 'Fields', app_logo_url: null, scopes: ['profile:read'], authorized_at: expect.any(String), active_token_count: 1 }],
    });
  });

  it('500 `Failed to revoke oauth authorization` when the write fails (§7.4); nothing changes and the token keeps working', async () => {
    const user = await newUser(stack.db);
    const app = await newApp(stack);
    const tokens = await obtainTokens(stack, app, user.id, 'profile:read');
    await sql`CREATE FUNCTION test_refuse_token_writes() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by test'; END $$`.execute(stack.db);
    await sql`CREATE TRIGGER test_refuse_token_writes BEFORE UPDATE ON oauth_tokens FOR EACH ROW EXECUTE FUNCTION test_refuse_token_writes()`.execute(stack.db);
    try {
      const headers = await asUser(user.id);
      const res = await expectUnchanged(stack.db, () => stack.app.inject({ method: 'DELETE', url: `/my/credentials/oauth-authorizations/${app.appId}`, headers }));
      expect(res.statusCode).toBe(500);
      expect(res.json()).toEqual({ error: 'Failed to revoke oauth authorization', message: 'Failed to revoke oauth authorization' });
    } finally {
      await sql`DROP TRIGGER test_refuse_token_writes ON oauth_tokens`.execute(stack.db);
      await sql`DROP FUNCTION test_refuse_token_writes()`.execute(stack.db);
    }
    expect((await userinfo(tokens.access_token)).statusCode).toBe(200);
  });
});
