import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateToken } from '../../shared/credentials/tokens.js';
import { deleteOAuthApp, disableOAuthApp } from '../../shared/credentials/oauth/apps.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import {
  approveViaInject, authorizeQuery, challengeOf, consentFormFields, expectUnchanged, newApp, newUser, newVerifier, obtainCode,
  obtainTokens, tokenRequest,
} from './oauth-helpers.js';

/** Every refused request: a clear 4xx, and the OAuth tables unchanged unless the refusal itself must revoke. */
describe('OAuth authorization server: bad input', () => {
  let stack: TestStack;
  let app: Awaited<ReturnType<typeof newApp>>;
  let user: Awaited<ReturnType<typeof newUser>>;
  let jwt: string;

  beforeAll(async () => {
    stack = await createTestStack();
    app = await newApp(stack);
    user = await newUser(stack.db);
    jwt = await stack.deps.idp.issue(user.id, 600);
  });
  afterAll(() => stack?.close());

  const userinfo = (token: string) => stack.app.inject({ method: 'GET', url: '/oauth/userinfo', headers: { authorization: `Bearer ${token}` } });
  const authorize = (query: string, cookie = `wf_session=${jwt}`) =>
    stack.app.inject({ method: 'GET', url: `/oauth/authorize?${query}`, headers: { cookie } });
  const validRequest = () => ({ clientId: app.clientId, redirectUri: app.redirectUri, scope: 'profile:read', state: 'st', challenge: challengeOf(newVerifier()), method: 'S256' });
  const expectRedirectError = (res: { statusCode: number; headers: Record<string, unknown> }, error: string) => {
    expect(res.statusCode).toBe(302);
    const location = new URL(res.headers.location as string);
    expect(location.origin + location.pathname).toBe(app.redirectUri);
    expect(location.searchParams.get('error')).toBe(error);
    expect(location.searchParams.get('state')).toBe('st');
    expect(location.searchParams.get('code')).toBeNull();
  };

  describe('userinfo', () => {
    it('an unknown access token is 401 Invalid or revoked OAuth token', async () => {
      const res = await expectUnchanged(stack.db, () => userinfo(generateToken('oauthAccess')));
      expect(res.statusCode).toBe(401);
      expect(res.json()).toMatchObject({ error: 'Invalid or revoked OAuth token' });
    });

    it('a token with a bad checksum is 401 Invalid or revoked OAuth token', async () => {
      const { access_token } = await obtainTokens(stack, app, user.id);
      const last = access_token.at(-1) === 'A' ? 'B' : 'A';
      const res = await expectUnchanged(stack.db, () => userinfo(access_token.slice(0, -1) + last));
      expect(res.statusCode).toBe(401);
      expect(res.json()).toMatchObject({ error: 'Invalid or revoked OAuth token' });
    });

    it('a revoked access token is 401 Invalid or revoked OAuth token', async () => {
      const { access_token } = await obtainTokens(stack, app, user.id);
      const revoke = await stack.app.inject({
        method: 'POST', url: '/oauth/revoke', headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ token: access_token, token_type_hint: 'access_token', client_id: app.clientId }).toString(),
      });
      expect(revoke.statusCode).toBe(200);
      const res = await expectUnchanged(stack.db, () => userinfo(access_token));
      expect(res.statusCode).toBe(401);
      expect(res.json()).toMatchObject({ error: 'Invalid or revoked OAuth token' });
    });

    it('an expired access token is 401 OAuth token has expired', async () => {
      const { access_token } = await obtainTokens(stack, app, user.id);
      await stack.db.updateTable('oauth_tokens').set({ expires_at: new Date(Date.now() - 1000) })
        .where('user_id', '=', user.id).where('kind', '=', 'access').where('revoked_at', 'is', null).execute();
      const res = await expectUnchanged(stack.db, () => userinfo(access_token));
      expect(res.statusCode).toBe(401);
      expect(res.json()).toMatchObject({ error: 'OAuth token has expired' });
    });

    it('a token without profile:read is 403 insufficient_scope', async () => {
      const { access_token } = await obtainTokens(stack, app, user.id, 'orders:checkout');
      const res = await expectUnchanged(stack.db, () => userinfo(access_token));
      expect(res.statusCode).toBe(403);
      expect(res.json()).toMatchObject({ error: 'insufficient_scope' });
    });

    it('a refresh token is not an access token (401)', async () => {
      const { refresh_token } = await obtainTokens(stack, app, user.id);
      const res = await expectUnchanged(stack.db, () => userinfo(refresh_token));
      expect(res.statusCode).toBe(401);
      expect(res.json()).toMatchObject({ error: 'Invalid or revoked OAuth token' });
    });
  });

  describe('disabled and deleted apps', () => {
    it('a disabled app: its access tokens are 401 and its refresh tokens invalid_grant, all at once', async () => {
      const own = await newApp(stack);
      const a = await obtainTokens(stack, own, user.id);
      const b = await obtainTokens(stack, own, user.id);
      await disableOAuthApp(stack.db, own.appId);
      for (const t of [a, b]) {
        const res = await userinfo(t.access_token);
        expect(res.statusCode).toBe(401);
        expect(res.json()).toMatchObject({ error: 'Invalid or revoked OAuth token' });
      }
      const refresh = await expectUnchanged(stack.db, () => tokenRequest(stack, { grant_type: 'refresh_token', client_id: own.clientId, refresh_token: a.refresh_token }));
      expect(refresh.statusCode).toBe(400);
      expect(refresh.json()).toMatchObject({ error: 'invalid_grant' });
      // New authorizations are refused too (after the redirect URI is known: redirected).
      const res = await expectUnchanged(stack.db, () => authorize(authorizeQuery({ ...validRequest(), clientId: own.clientId, redirectUri: own.redirectUri })));
      expect(res.statusCode).toBe(302);
      expect(new URL(res.headers.location as string).searchParams.get('error')).toBe('access_denied');
    });

    it('a deleted app: tokens are 401, refresh is invalid_grant, authorize is a 400 page', async () => {
      const own = await newApp(stack);
      const a = await obtainTokens(stack, own, user.id);
      await deleteOAuthApp(stack.db, own.appId);
      expect((await userinfo(a.access_token)).statusCode).toBe(401);
      const refresh = await expectUnchanged(stack.db, () => tokenRequest(stack, { grant_type: 'refresh_token', client_id: own.clientId, refresh_token: a.refresh_token }));
      expect(refresh.statusCode).toBe(400);
      expect(refresh.json()).toMatchObject({ error: 'invalid_grant' });
      const res = await expectUnchanged(stack.db, () => authorize(authorizeQuery({ ...validRequest(), clientId: own.clientId, redirectUri: own.redirectUri })));
      expect(res.statusCode).toBe(400);
      expect(res.headers.location).toBeUndefined();
    });
  });

  describe('authorization endpoint', () => {
    it('PKCE missing: redirected with invalid_request, no code', async () => {
      const res = await expectUnchanged(stack.db, () => authorize(authorizeQuery({ ...validRequest(), challenge: undefined, method: undefined })));
      expectRedirectError(res, 'invalid_request');
    });

    it('code_challenge_method=plain is refused', async () => {
      const res = await expectUnchanged(stack.db, () => authorize(authorizeQuery({ ...validRequest(), challenge: newVerifier(), method: 'plain' })));
      expectRedirectError(res, 'invalid_request');
      expect(new URL(res.headers.location as string).searchParams.get('error_description')).toContain('S256');
    });

    it('response_type=token (implicit) is unsupported_response_type', async () => {
      const res = await expectUnchanged(stack.db, () => authorize(authorizeQuery({ ...validRequest(), responseType: 'token' })));
      expectRedirectError(res, 'unsupported_response_type');
    });

    it('a scope beyond the client\'s allowed scopes is invalid_scope', async () => {
      const res = await expectUnchanged(stack.db, () => authorize(authorizeQuery({ ...validRequest(), scope: 'profile:read chat:completions' })));
      expectRedirectError(res, 'invalid_scope');
    });

    it.each([
      ['trailing slash', 'http://127.0.0.1:8765/callback/'],
      ['case', 'http://127.0.0.1:8765/Callback'],
      ['extra query', 'http://127.0.0.1:8765/callback?x=1'],
      ['other port', 'http://127.0.0.1:8766/callback'],
    ])('redirect_uri variant (%s) is a 400 page, never a redirect', async (_name, redirectUri) => {
      const res = await expectUnchanged(stack.db, () => authorize(authorizeQuery({ ...validRequest(), redirectUri })));
      expect(res.statusCode).toBe(400);
      expect(res.headers.location).toBeUndefined();
      expect(res.headers['content-type']).toContain('text/html');
      expect(res.body).toContain('redirect_uri is not registered');
      const json = await stack.app.inject({ method: 'GET', url: `/oauth/authorize?${authorizeQuery({ ...validRequest(), redirectUri })}`, headers: { accept: 'application/json' } });
      expect(json.statusCode).toBe(400);
      expect(json.json()).toEqual({ error: 'invalid_request', error_description: 'redirect_uri is not registered for this client' });
    });

    it('an unknown client_id is a 400 page even with a bad response_type', async () => {
      const res = await expectUnchanged(stack.db, () => authorize(authorizeQuery({ ...validRequest(), clientId: 'wfc-nope', responseType: 'token' })));
      expect(res.statusCode).toBe(400);
      expect(res.headers.location).toBeUndefined();
      expect(res.body).toContain('invalid_client');
    });

    it('a private app authorized by a non-owner is refused (access_denied), by GET and by a forged POST', async () => {
      const priv = await newApp(stack, { reviewStatus: 'private', name: 'Private App' });
      const request = { ...validRequest(), clientId: priv.clientId, redirectUri: priv.redirectUri };
      const res = await expectUnchanged(stack.db, () => authorize(authorizeQuery(request)));
      expect(res.statusCode).toBe(302);
      expect(new URL(res.headers.location as string).searchParams.get('error')).toBe('access_denied');
      // The owner may: build a valid consent form as the owner, then submit it as the non-owner (wrong CSRF binding).
      const ownerJwt = await stack.deps.idp.issue(priv.ownerId, 600);
      const page = await authorize(authorizeQuery(request), `wf_session=${ownerJwt}`);
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain('Private App');
      const forged = await expectUnchanged(stack.db, () => stack.app.inject({
        method: 'POST', url: '/oauth/authorize', headers: { cookie: `wf_session=${jwt}`, 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ ...consentFormFields(page.body), decision: 'approve' }).toString(),
      }));
      expect(forged.statusCode).toBe(403);
      expect(forged.headers.location).toBeUndefined();
      // And the owner succeeds.
      const ok = await approveViaInject(stack, request, ownerJwt);
      expect(ok.searchParams.get('code')).toBeTruthy();
    });

    it('Deny redirects with access_denied and creates nothing', async () => {
      const location = await expectUnchanged(stack.db, () => approveViaInject(stack, validRequest(), jwt, 'deny'));
      expect(location.searchParams.get('error')).toBe('access_denied');
      expect(location.searchParams.get('state')).toBe('st');
      expect(location.searchParams.get('code')).toBeNull();
    });

    it('an approval without or with a wrong CSRF token is 403; without a session it is 401', async () => {
      const request = validRequest();
      const page = await authorize(authorizeQuery(request));
      const fields = consentFormFields(page.body);
      const post = (body: Record<string, string>, cookie?: string) => stack.app.inject({
        method: 'POST', url: '/oauth/authorize',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
        payload: new URLSearchParams(body).toString(),
      });
      const { csrf_token: csrf, ...withoutCsrf } = fields;
      const missing = await expectUnchanged(stack.db, () => post({ ...withoutCsrf, decision: 'approve' }, `wf_session=${jwt}`));
      expect(missing.statusCode).toBe(403);
      const tampered = await expectUnchanged(stack.db, () => post({ ...fields, scope: 'profile:read orders:checkout', decision: 'approve' }, `wf_session=${jwt}`));
      expect(tampered.statusCode).toBe(403);
      const crossSite = await expectUnchanged(stack.db, () => stack.app.inject({
        method: 'POST', url: '/oauth/authorize',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `wf_session=${jwt}`, origin: 'https://evil.example' },
        payload: new URLSearchParams({ ...fields, decision: 'approve' }).toString(),
      }));
      expect(crossSite.statusCode).toBe(403);
      const noSession = await expectUnchanged(stack.db, () => post({ ...fields, csrf_token: csrf!, decision: 'approve' }));
      expect(noSession.statusCode).toBe(401);
      expect(noSession.body).toContain('action="/oauth/authorize/sign-in"');
    });

    it('the sign-in form refuses an invalid JWT (401) and sets no cookie', async () => {
      const request = validRequest();
      const page = await authorize(authorizeQuery(request), 'wf_session=garbage');
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain('action="/oauth/authorize/sign-in"');
      const res = await stack.app.inject({
        method: 'POST', url: '/oauth/authorize/sign-in', headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ ...consentFormFields(page.body), id_token: 'not.a.jwt' }).toString(),
      });
      expect(res.statusCode).toBe(401);
      expect(res.headers['set-cookie']).toBeUndefined();
    });

    it('the consent page escapes the app name', async () => {
      const evil = await newApp(stack, { name: '<script>alert(1)</script>"&' });
      const page = await authorize(authorizeQuery({ ...validRequest(), clientId: evil.clientId, redirectUri: evil.redirectUri }));
      expect(page.statusCode).toBe(200);
      expect(page.body).not.toContain('<script>alert(1)</script>');
      expect(page.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;&quot;&amp;');
      expect(page.headers['x-frame-options']).toBe('DENY');
    });
  });

  describe('token endpoint', () => {
    const exchange = (code: string, verifier: string | undefined, extra: Record<string, string> = {}) =>
      tokenRequest(stack, { grant_type: 'authorization_code', client_id: app.clientId, code, redirect_uri: app.redirectUri, ...(verifier ? { code_verifier: verifier } : {}), ...extra });

    it('a wrong code_verifier is invalid_grant and the code stays unused', async () => {
      const { code, verifier } = await obtainCode(stack, app, user.id);
      const res = await expectUnchanged(stack.db, () => exchange(code, newVerifier()));
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'invalid_grant', error_description: 'code_verifier does not match the code_challenge' });
      expect((await exchange(code, verifier)).statusCode).toBe(200);
    });

    it('a missing code_verifier is invalid_request', async () => {
      const { code } = await obtainCode(stack, app, user.id);
      const res = await expectUnchanged(stack.db, () => exchange(code, undefined));
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ error: 'invalid_request', error_description: 'code_verifier is required (PKCE)' });
    });

    it('a code_verifier for an authorization that had no challenge gets nothing', async () => {
      // Without a challenge the authorization endpoint issues no code at all…
      const verifier = newVerifier();
      const res = await expectUnchanged(stack.db, () => authorize(authorizeQuery({ ...validRequest(), challenge: undefined, method: undefined })));
      expect(new URL(res.headers.location as string).searchParams.get('code')).toBeNull();
      // …so any code presented with that verifier is unknown.
      const token = await expectUnchanged(stack.db, () => exchange('made-up-code-without-challenge', verifier));
      expect(token.statusCode).toBe(400);
      expect(token.json()).toMatchObject({ error: 'invalid_grant' });
    });

    it('a reused code is invalid_grant and revokes every token its grant issued', async () => {
      const { code, verifier } = await obtainCode(stack, app, user.id);
      const first = await exchange(code, verifier);
      expect(first.statusCode).toBe(200);
      const { access_token, refresh_token } = first.json();
      expect((await userinfo(access_token)).statusCode).toBe(200);
      const second = await exchange(code, verifier);
      expect(second.statusCode).toBe(400);
      expect(second.json()).toMatchObject({ error: 'invalid_grant', error_description: 'The authorization code was already used' });
      expect((await userinfo(access_token)).json()).toMatchObject({ error: 'Invalid or revoked OAuth token' });
      const refresh = await tokenRequest(stack, { grant_type: 'refresh_token', client_id: app.clientId, refresh_token });
      expect(refresh.json()).toMatchObject({ error: 'invalid_grant' });
    });

    it('an expired code is invalid_grant', async () => {
      const { code, verifier } = await obtainCode(stack, app, user.id);
      await stack.db.updateTable('oauth_codes').set({ expires_at: new Date(Date.now() - 1000) }).where('used_at', 'is', null).execute();
      const res = await expectUnchanged(stack.db, () => exchange(code, verifier));
      expect(res.json()).toMatchObject({ error: 'invalid_grant', error_description: 'The authorization code has expired' });
    });

    it('a redirect_uri different from the authorization request is invalid_grant', async () => {
      const { code, verifier } = await obtainCode(stack, app, user.id);
      const res = await expectUnchanged(stack.db, () => exchange(code, verifier, { redirect_uri: 'http://127.0.0.1:8765/callback/' }));
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ error: 'invalid_grant' });
    });

    it('a code issued to another client is invalid_grant', async () => {
      const other = await newApp(stack);
      const { code, verifier } = await obtainCode(stack, other, user.id);
      const res = await expectUnchanged(stack.db, () => exchange(code, verifier));
      expect(res.json()).toMatchObject({ error: 'invalid_grant' });
    });

    it('a replayed refresh token is invalid_grant and revokes the whole grant', async () => {
      const { refresh_token } = await obtainTokens(stack, app, user.id);
      const rotated = await tokenRequest(stack, { grant_type: 'refresh_token', client_id: app.clientId, refresh_token });
      expect(rotated.statusCode).toBe(200);
      const fresh = rotated.json();
      const replay = await tokenRequest(stack, { grant_type: 'refresh_token', client_id: app.clientId, refresh_token });
      expect(replay.statusCode).toBe(400);
      expect(replay.json()).toMatchObject({ error: 'invalid_grant' });
      expect((await userinfo(fresh.access_token)).statusCode).toBe(401);
      const next = await tokenRequest(stack, { grant_type: 'refresh_token', client_id: app.clientId, refresh_token: fresh.refresh_token });
      expect(next.json()).toMatchObject({ error: 'invalid_grant' });
      const grant = await stack.db.selectFrom('oauth_tokens as t').innerJoin('oauth_grants as g', 'g.id', 't.grant_id')
        .select(['g.revoked_at']).where('t.token_hash', '=', (await import('../../shared/crypto.js')).sha256Hex(refresh_token)).executeTakeFirstOrThrow();
      expect(grant.revoked_at).not.toBeNull();
    });

    it.each(['password', 'implicit', 'client_credentials'])('grant_type=%s is unsupported_grant_type', async (grantType) => {
      const res = await expectUnchanged(stack.db, () => tokenRequest(stack, { grant_type: grantType, client_id: app.clientId, username: 'a', password: 'b' }));
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ error: 'unsupported_grant_type' });
    });

    it('an unknown client_id is 401 invalid_client; a repeated parameter is invalid_request', async () => {
      const res = await expectUnchanged(stack.db, () => tokenRequest(stack, { grant_type: 'authorization_code', client_id: 'wfc-unknown', code: 'x', redirect_uri: app.redirectUri, code_verifier: newVerifier() }));
      expect(res.statusCode).toBe(401);
      expect(res.json()).toMatchObject({ error: 'invalid_client' });
      const repeated = await stack.app.inject({
        method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: `grant_type=refresh_token&client_id=${app.clientId}&client_id=${app.clientId}`,
      });
      expect(repeated.statusCode).toBe(400);
      expect(repeated.json()).toMatchObject({ error: 'invalid_request' });
    });
  });

  describe('revocation endpoint', () => {
    const revoke = (form: Record<string, string>) => stack.app.inject({
      method: 'POST', url: '/oauth/revoke', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: new URLSearchParams(form).toString(),
    });

    it('a token of another client: 200 and nothing revoked', async () => {
      const other = await newApp(stack);
      const { access_token, refresh_token } = await obtainTokens(stack, app, user.id);
      for (const token of [access_token, refresh_token]) {
        const res = await expectUnchanged(stack.db, () => revoke({ token, client_id: other.clientId }));
        expect(res.statusCode).toBe(200);
      }
      expect((await userinfo(access_token)).statusCode).toBe(200);
    });

    it('an unknown or malformed token: 200 and nothing changes', async () => {
      for (const token of [generateToken('oauthAccess'), generateToken('oauthRefresh'), 'garbage']) {
        const res = await expectUnchanged(stack.db, () => revoke({ token, client_id: app.clientId }));
        expect(res.statusCode).toBe(200);
      }
    });

    it('a missing token or client_id is 400 invalid_request', async () => {
      const noToken = await expectUnchanged(stack.db, () => revoke({ client_id: app.clientId }));
      expect(noToken.statusCode).toBe(400);
      expect(noToken.json()).toMatchObject({ error: 'invalid_request' });
      const noClient = await expectUnchanged(stack.db, () => revoke({ token: generateToken('oauthAccess') }));
      expect(noClient.statusCode).toBe(400);
    });
  });
});
