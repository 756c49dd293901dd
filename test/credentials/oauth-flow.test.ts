import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addOAuthClient } from '../../shared/credentials/oauth/apps.js';
import { runCli } from '../harness/cli.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { consentFormFields, newApp, newUser, obtainTokens, OAUTH_TABLES } from './oauth-helpers.js';

/**
 * The whole authorization code + PKCE flow driven by a real OAuth client library (oauth4webapi)
 * against the API listening on 127.0.0.1, plus the user's own authorization list and the CLI.
 */
describe('OAuth authorization server: PKCE flow with oauth4webapi', () => {
  let stack: TestStack;
  let base: string;
  let as: oauth.AuthorizationServer;
  const insecure = { [oauth.allowInsecureRequests]: true };

  beforeAll(async () => {
    stack = await createTestStack();
    base = await stack.app.listen({ port: 0, host: '127.0.0.1' });
    const discovery = await oauth.discoveryRequest(new URL(base), { algorithm: 'oauth2', ...insecure });
    as = await oauth.processDiscoveryResponse(new URL(base), discovery);
  });
  afterAll(() => stack?.close());

  /** What the browser does: the consent page with the session cookie, then Approve (form POST). */
  async function approveInBrowser(authorizationUrl: URL, jwt: string): Promise<URL> {
    const page = await fetch(authorizationUrl, { headers: { cookie: `wf_session=${jwt}` }, redirect: 'manual' });
    expect(page.status).toBe(200);
    const html = await page.text();
    const res = await fetch(`${base}/oauth/authorize`, {
      method: 'POST', redirect: 'manual',
      headers: { cookie: `wf_session=${jwt}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...consentFormFields(html), decision: 'approve' }),
    });
    expect(res.status).toBe(303);
    return new URL(res.headers.get('location')!);
  }

  it('authorize → consent (sign in with the JWT form) → code → tokens → userinfo → refresh (rotation) → revoke', async () => {
    const user = await newUser(stack.db, 'Ada');
    const { clientId, redirectUri } = await newApp(stack, { name: 'Flow App' });
    const client: oauth.Client = { client_id: clientId };
    const clientAuth = oauth.None();

    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const authorizationUrl = new URL(as.authorization_endpoint!);
    authorizationUrl.search = new URLSearchParams({
      response_type: 'code', client_id: clientId, redirect_uri: redirectUri, scope: 'profile:read orders:checkout', state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
    }).toString();

    // No session yet: the sign-in form, which turns a pasted JWT into the wf_session cookie.
    const signIn = await fetch(authorizationUrl, { redirect: 'manual' });
    expect(signIn.status).toBe(200);
    const signInHtml = await signIn.text();
    expect(signInHtml).toContain('action="/oauth/authorize/sign-in"');
    const jwt = await stack.deps.idp.issue(user.id, 600);
    const signedIn = await fetch(`${base}/oauth/authorize/sign-in`, {
      method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...consentFormFields(signInHtml), id_token: jwt }),
    });
    expect(signedIn.status).toBe(303);
    const cookie = signedIn.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^wf_session=[^;]+; Max-Age=\d+; Path=\/; HttpOnly; Secure; SameSite=Lax$/);
    const back = new URL(signedIn.headers.get('location')!, base);
    expect(back.pathname).toBe('/oauth/authorize');

    const callbackUrl = await approveInBrowser(back, decodeURIComponent(cookie.split(';')[0]!.split('=')[1]!));
    expect(callbackUrl.origin + callbackUrl.pathname).toBe(redirectUri);
    const params = oauth.validateAuthResponse(as, client, callbackUrl, state);

    const codeResponse = await oauth.authorizationCodeGrantRequest(as, client, clientAuth, params, redirectUri, verifier, insecure);
    expect(codeResponse.headers.get('cache-control')).toBe('no-store');
    const tokens = await oauth.processAuthorizationCodeResponse(as, client, codeResponse);
    expect(tokens.token_type).toBe('bearer');
    expect(tokens.expires_in).toBe(3600);
    expect(tokens.scope).toBe('profile:read orders:checkout');
    expect(tokens.access_token).toMatch(/^wfo-/);
    expect(tokens.refresh_token).toMatch(/^wfr-/);

    const info = await oauth.processUserInfoResponse(as, client, user.id,
      await oauth.userInfoRequest(as, client, tokens.access_token, insecure));
    expect(info).toEqual({ sub: user.id, email: user.email, name: user.name });

    // Rotation: the new pair works, the old refresh token is spent.
    const refreshed = await oauth.processRefreshTokenResponse(as, client,
      await oauth.refreshTokenGrantRequest(as, client, clientAuth, tokens.refresh_token!, insecure));
    expect(refreshed.access_token).not.toBe(tokens.access_token);
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    const spent = await stack.db.selectFrom('oauth_tokens').select(['used_at']).where('kind', '=', 'refresh').where('user_id', '=', user.id)
      .orderBy('created_at').execute();
    expect(spent[0]!.used_at).not.toBeNull();
    expect(spent[1]!.used_at).toBeNull();
    const again = await oauth.processUserInfoResponse(as, client, user.id, await oauth.userInfoRequest(as, client, refreshed.access_token, insecure));
    expect(again.sub).toBe(user.id);

    // Revoke the new access token: userinfo refuses it with the §5.4 text.
    await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, clientAuth, refreshed.access_token, insecure));
    const refused = await fetch(`${base}/oauth/userinfo`, { headers: { authorization: `Bearer ${refreshed.access_token}` } });
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ error: 'Invalid or revoked OAuth token' });

    // Revoking the refresh token takes the whole grant with it.
    await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, clientAuth, refreshed.refresh_token!, insecure));
    const live = await stack.db.selectFrom('oauth_tokens').select('id').where('user_id', '=', user.id).where('revoked_at', 'is', null).execute();
    expect(live).toEqual([]);
    const afterRevoke = await oauth.refreshTokenGrantRequest(as, client, clientAuth, refreshed.refresh_token!, insecure);
    expect(afterRevoke.status).toBe(400);
    expect(await afterRevoke.json()).toMatchObject({ error: 'invalid_grant' });

    // No plaintext token or code anywhere in the OAuth tables.
    const secrets = [tokens.access_token, tokens.refresh_token!, refreshed.access_token, refreshed.refresh_token!, params.get('code')!];
    for (const table of OAUTH_TABLES) {
      const rows = (await sql`select * from ${sql.table(table)}`.execute(stack.db)).rows;
      const dump = JSON.stringify(rows);
      for (const secret of secrets) expect(dump.includes(secret), `${table} holds a plaintext secret`).toBe(false);
    }
    const code = await stack.db.selectFrom('oauth_codes').select(['code_hash', 'used_at']).execute();
    expect(code.map((c) => c.code_hash)).toContain(oauth4webapiSha256(params.get('code')!));
  });

  it('sub is the same global user id across two client ids of one app, and each client is isolated', async () => {
    const user = await newUser(stack.db);
    const web = await newApp(stack, { name: 'Multi Client' });
    const desktop = { clientId: (await addOAuthClient(stack.db, web.appId, { platform: 'desktop', redirectUris: ['http://127.0.0.1:9001/cb'], scopes: ['profile:read'] })).clientId, redirectUri: 'http://127.0.0.1:9001/cb' };
    const a = await obtainTokens(stack, web, user.id);
    const b = await obtainTokens(stack, desktop, user.id);
    const subOf = async (token: string) => (await stack.app.inject({ method: 'GET', url: '/oauth/userinfo', headers: { authorization: `Bearer ${token}` } })).json().sub;
    expect(await subOf(a.access_token)).toBe(user.id);
    expect(await subOf(b.access_token)).toBe(user.id);
    // The desktop client cannot refresh the web client's token.
    const cross = await stack.app.inject({
      method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ grant_type: 'refresh_token', client_id: desktop.clientId, refresh_token: a.refresh_token }).toString(),
    });
    expect(cross.statusCode).toBe(400);
    expect(cross.json().error).toBe('invalid_grant');
  });

  it('GET /my/credentials/oauth-authorizations lists one item per app; DELETE revokes strictly by user and app', async () => {
    const user = await newUser(stack.db);
    const other = await newUser(stack.db);
    const first = await newApp(stack, { name: 'First App' });
    const second = await newApp(stack, { name: 'Second App' });
    const gone = await newApp(stack, { name: 'Deleted App' });
    const off = await newApp(stack, { name: 'Disabled App' });
    await obtainTokens(stack, first, user.id, 'profile:read');
    await obtainTokens(stack, first, user.id, 'orders:checkout');
    await obtainTokens(stack, second, user.id, 'mobile:full');
    await obtainTokens(stack, gone, user.id);
    await obtainTokens(stack, off, user.id);
    await obtainTokens(stack, first, other.id);
    await stack.db.updateTable('oauth_apps').set({ deleted_at: new Date() }).where('id', '=', gone.appId).execute();
    await stack.db.updateTable('oauth_apps').set({ disabled_at: new Date() }).where('id', '=', off.appId).execute();

    const jwt = await stack.deps.idp.issue(user.id, 600);
    const auth = { authorization: `Bearer ${jwt}` };
    const list = await stack.app.inject({ method: 'GET', url: '/my/credentials/oauth-authorizations', headers: auth });
    expect(list.statusCode).toBe(200);
    const items = list.json().items as Array<Record<string, unknown>>;
    expect(items.map((i) => i.app_name).sort()).toEqual(['Disabled App', 'First App', 'Second App']);
    const firstItem = items.find((i) => i.app_id === first.appId)!;
    expect(firstItem).toMatchObject({ app_name: 'First App', app_logo_url: null, scopes: ['orders:checkout', 'profile:read'], active_token_count: 2 });
    const latest = await stack.db.selectFrom('oauth_tokens').select((eb) => eb.fn.max('created_at').as('at'))
      .where('user_id', '=', user.id).where('app_id', '=', first.appId).executeTakeFirstOrThrow();
    expect(firstItem.authorized_at).toBe((latest.at as Date).toISOString());

    const del = await stack.app.inject({ method: 'DELETE', url: `/my/credentials/oauth-authorizations/${first.appId}`, headers: auth });
    expect(del.statusCode).toBe(200);
    expect(del.json()).toEqual({ success: true, revokedCount: 2 });
    const again = await stack.app.inject({ method: 'DELETE', url: `/my/credentials/oauth-authorizations/${first.appId}`, headers: auth });
    expect(again.json()).toEqual({ success: true, revokedCount: 0 });
    const unknown = await stack.app.inject({ method: 'DELETE', url: '/my/credentials/oauth-authorizations/not-a-uuid', headers: auth });
    expect(unknown.json()).toEqual({ success: true, revokedCount: 0 });

    // The other user's tokens for the same app are untouched.
    const othersLive = await stack.db.selectFrom('oauth_tokens').select('id').where('user_id', '=', other.id).where('revoked_at', 'is', null).execute();
    expect(othersLive).toHaveLength(2);
    const after = (await stack.app.inject({ method: 'GET', url: '/my/credentials/oauth-authorizations', headers: auth })).json().items;
    expect(after.map((i: { app_name: string }) => i.app_name).sort()).toEqual(['Disabled App', 'Second App']);
  });

  it('OAuth tokens cannot use /my/credentials (403 insufficient_scope without mobile:full)', async () => {
    const user = await newUser(stack.db);
    const app = await newApp(stack);
    const { access_token } = await obtainTokens(stack, app, user.id, 'profile:read');
    const res = await stack.app.inject({ method: 'GET', url: '/my/credentials/oauth-authorizations', headers: { authorization: `Bearer ${access_token}` } });
    expect(res.statusCode).toBe(403);
    expect(res.json().error).toBe('insufficient_scope');
  });

  it('CLI: oauth-app create and oauth-token issue', async () => {
    const user = await newUser(stack.db);
    const created = await runCli(['oauth-app', 'create', '--owner', user.id, '--name', 'CLI App', '--redirect-uri', 'https://example.com/cb', '--scopes', 'profile:read mobile:full'], stack.env);
    expect(created.code, created.stderr).toBe(0);
    expect(created.json).toEqual({ appId: expect.any(String), clientId: expect.stringMatching(/^wfc-/) });
    const appId = created.json!.appId as string;
    const client = await stack.db.selectFrom('oauth_clients').selectAll().where('app_id', '=', appId).executeTakeFirstOrThrow();
    expect(client).toMatchObject({ platform: 'web', redirect_uris: ['https://example.com/cb'], allowed_scopes: ['profile:read', 'mobile:full'] });

    const issued = await runCli(['oauth-token', 'issue', '--app', appId, '--user', user.id, '--scopes', 'profile:read', '--ttl', '120'], stack.env);
    expect(issued.code, issued.stderr).toBe(0);
    expect(issued.json).toEqual({ accessToken: expect.stringMatching(/^wfo-/), refreshToken: expect.stringMatching(/^wfr-/), expiresIn: 120 });
    const info = await stack.app.inject({ method: 'GET', url: '/oauth/userinfo', headers: { authorization: `Bearer ${issued.json!.accessToken as string}` } });
    expect(info.json()).toMatchObject({ sub: user.id, email: user.email });

    const bad = await runCli(['oauth-token', 'issue', '--app', appId, '--user', user.id, '--scopes', 'root:all'], stack.env);
    expect(bad.code).not.toBe(0);
    expect(bad.error).toMatchObject({ error: 'invalid_scope' });
    const missing = await runCli(['oauth-app', 'create', '--owner', user.id, '--name', 'X'], stack.env);
    expect(missing.code).toBe(2);
    expect(missing.error?.message).toContain('--redirect-uri');
  });
});

function oauth4webapiSha256(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}
