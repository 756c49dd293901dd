import { buildApp } from '../../api/app.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { deleteOAuthApp, disableOAuthApp } from '../../shared/credentials/oauth/apps.js';
import { generateToken } from '../../shared/credentials/tokens.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { expectUnchanged, newApp, newUser, obtainTokens } from './oauth-helpers.js';

const COOKIE = /^wf_docs_session=([^;]*); Max-Age=(\d+); Path=\/; HttpOnly; Secure; SameSite=Lax$/;

/** Spec §4.6: the docs site's session cookie, each check in the spec's order. */
describe('docs-auth cookie endpoints', () => {
  let stack: TestStack;
  let docsApp: Awaited<ReturnType<typeof newApp>>;
  let user: Awaited<ReturnType<typeof newUser>>;

  const setClientId = async (value: unknown) => {
    if (value === undefined) await stack.db.deleteFrom('site_settings').where('key', '=', 'DOCS_AUTH_OAUTH_CLIENT_ID').execute();
    else await upsertSiteSetting(stack.db, 'DOCS_AUTH_OAUTH_CLIENT_ID', value);
    stack.deps.settings.invalidate('DOCS_AUTH_OAUTH_CLIENT_ID');
  };
  const sync = (payload: string | undefined, contentType = 'application/json') => stack.app.inject({
    method: 'POST', url: '/docs-auth/sync-cookie', ...(payload === undefined ? {} : { payload, headers: { 'content-type': contentType } }),
  });
  const syncToken = (token: unknown) => sync(JSON.stringify({ access_token: token }));

  beforeAll(async () => {
    stack = await createTestStack();
    user = await newUser(stack.db);
    docsApp = await newApp(stack, { name: 'Docs Site' });
    await setClientId(docsApp.clientId);
  });
  afterEach(() => setClientId(docsApp.clientId));
  afterAll(() => stack?.close());

  it('a live docs-site token sets the HttpOnly cookie and answers { ok, expiresIn }', async () => {
    const { access_token } = await obtainTokens(stack, docsApp, user.id);
    const res = await expectUnchanged(stack.db, () => syncToken(access_token));
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toEqual({ ok: true, expiresIn: expect.any(Number) });
    expect(body.expiresIn).toBeGreaterThan(3590);
    expect(body.expiresIn).toBeLessThanOrEqual(3600);
    const cookie = res.headers['set-cookie'] as string;
    const match = COOKIE.exec(cookie);
    expect(match, cookie).not.toBeNull();
    expect(decodeURIComponent(match![1]!)).toBe(access_token);
    expect(Number(match![2])).toBe(body.expiresIn);
    expect(cookie).not.toMatch(/Domain=/i);
  });

  it('1. no client id configured (setting and env) is 500 service_misconfigured, checked before the body', async () => {
    await setClientId(undefined);
    expect(stack.config.DOCS_AUTH_OAUTH_CLIENT_ID).toBeUndefined();
    for (const payload of ['{not json', JSON.stringify({ access_token: generateToken('oauthAccess') })]) {
      const res = await expectUnchanged(stack.db, () => sync(payload));
      expect(res.statusCode).toBe(500);
      expect(res.json()).toEqual({ error: 'service_misconfigured' });
      expect(res.headers['set-cookie']).toBeUndefined();
    }
  });

  it('the env variable DOCS_AUTH_OAUTH_CLIENT_ID is the fallback when the setting is missing', async () => {
    await setClientId(undefined);
    const app = await buildApp({ ...stack.deps, config: { ...stack.config, DOCS_AUTH_OAUTH_CLIENT_ID: docsApp.clientId } }, { logger: false });
    try {
      const { access_token } = await obtainTokens(stack, docsApp, user.id);
      const res = await app.inject({ method: 'POST', url: '/docs-auth/sync-cookie', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ access_token }) });
      expect(res.statusCode).toBe(200);
    } finally {
      await app.close();
    }
  });

  it.each([
    ['malformed JSON', '{"access_token": '],
    ['an empty body', ''],
    ['plain text', 'access_token=wfo-x'],
  ])('2. %s is 400 invalid_body', async (_name, payload) => {
    const res = await expectUnchanged(stack.db, () => sync(payload));
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'invalid_body' });
  });

  it('2. no body at all is 400 invalid_body', async () => {
    const res = await sync(undefined);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'invalid_body' });
  });

  it.each([
    ['missing', JSON.stringify({})],
    ['not a string', JSON.stringify({ access_token: 42 })],
    ['not an OAuth token', JSON.stringify({ access_token: 'hello' })],
    ['a refresh token', JSON.stringify({ access_token: generateToken('oauthRefresh') })],
    ['a bad checksum', JSON.stringify({ access_token: `${generateToken('oauthAccess').slice(0, -6)}AAAAAA` })],
    ['a JSON array', '[]'],
  ])('3. access_token %s is 400 access_token_required', async (_name, payload) => {
    const res = await expectUnchanged(stack.db, () => sync(payload));
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'access_token_required' });
  });

  it('4. an unknown, revoked or expired token is 401 invalid_token', async () => {
    expect((await expectUnchanged(stack.db, () => syncToken(generateToken('oauthAccess')))).json()).toEqual({ error: 'invalid_token' });

    const revoked = await obtainTokens(stack, docsApp, user.id);
    await stack.app.inject({
      method: 'POST', url: '/oauth/revoke', headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ token: revoked.access_token, client_id: docsApp.clientId }).toString(),
    });
    const r = await expectUnchanged(stack.db, () => syncToken(revoked.access_token));
    expect(r.statusCode).toBe(401);
    expect(r.json()).toEqual({ error: 'invalid_token' });

    const expired = await obtainTokens(stack, docsApp, user.id);
    await stack.db.updateTable('oauth_tokens').set({ expires_at: new Date(Date.now() - 1000) })
      .where('kind', '=', 'access').where('revoked_at', 'is', null).where('app_id', '=', docsApp.appId).execute();
    const e = await expectUnchanged(stack.db, () => syncToken(expired.access_token));
    expect(e.statusCode).toBe(401);
    expect(e.json()).toEqual({ error: 'invalid_token' });
  });

  it('5. a token of a disabled or deleted app is 401 invalid_token', async () => {
    for (const retire of [disableOAuthApp, deleteOAuthApp]) {
      const docs = await newApp(stack, { name: 'Docs Retired' });
      await setClientId(docs.clientId);
      const { access_token } = await obtainTokens(stack, docs, user.id);
      expect((await syncToken(access_token)).statusCode).toBe(200);
      await retire(stack.db, docs.appId);
      const res = await expectUnchanged(stack.db, () => syncToken(access_token));
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({ error: 'invalid_token' });
    }
  });

  it('6. a live token of another client is 401 invalid_token', async () => {
    const other = await newApp(stack, { name: 'Not Docs' });
    const { access_token } = await obtainTokens(stack, other, user.id);
    const res = await expectUnchanged(stack.db, () => syncToken(access_token));
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ error: 'invalid_token' });
  });

  it('logout is always 204 with no body and clears the cookie', async () => {
    for (const options of [{}, { payload: '{broken', headers: { 'content-type': 'application/json' } }, { headers: { authorization: 'Bearer junk' } }]) {
      const res = await stack.app.inject({ method: 'POST', url: '/docs-auth/logout', ...options });
      expect(res.statusCode).toBe(204);
      expect(res.body).toBe('');
      expect(res.headers['set-cookie']).toBe('wf_docs_session=; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Path=/; HttpOnly; Secure; SameSite=Lax');
    }
  });
});
