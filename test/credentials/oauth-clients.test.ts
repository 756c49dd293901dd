import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueTokensByOperator } from '../../shared/credentials/oauth/operator.js';
import { sha256Hex } from '../../shared/crypto.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { authorizeQuery, challengeOf, expectUnchanged, newUser, newVerifier, obtainCode, obtainTokens, tokenRequest } from './oauth-helpers.js';

const MISSING = '00000000-0000-4000-8000-000000000000';
const WEB_URI = 'https://app.example.com/callback';
const DESKTOP_URI = 'http://127.0.0.1:7777/cb';
const MOBILE_URI = 'com.example.app:/oauth';

interface ClientView { clientId: string; platform: string; scopes: string[] }
interface AppView { id: string; clients: ClientView[] }
type Client = { clientId: string; redirectUri: string };

/** Narrowing a client's scopes and removing a client (issue 45; docs/oauth.md "App lifecycle"). */
describe('OAuth clients narrowed and removed', () => {
  let stack: TestStack;
  let admin: Awaited<ReturnType<typeof newUser>>;

  beforeAll(async () => {
    stack = await createTestStack();
    admin = await newUser(stack.db, 'Admin');
    await stack.db.updateTable('users').set({ is_platform_admin: true }).where('id', '=', admin.id).execute();
  });
  afterAll(() => stack?.close());

  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const asUser = async (userId: string) => bearer(await stack.deps.idp.issue(userId, 600));
  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, headers: Record<string, string>, payload?: object) =>
    stack.app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload }) });
  /** Needs `profile:read`. */
  const userinfo = (token: string) => stack.app.inject({ method: 'GET', url: '/oauth/userinfo', headers: bearer(token) });
  /** Needs `orders:checkout`; read-only. */
  const myOrders = (token: string) => stack.app.inject({ method: 'GET', url: '/hardware-sales/orders', headers: bearer(token) });
  const refresh = (clientId: string, refreshToken: string, scope?: string) =>
    tokenRequest(stack, { grant_type: 'refresh_token', client_id: clientId, refresh_token: refreshToken, ...(scope ? { scope } : {}) });
  const removeClient = (appId: string, clientId: string, headers: Record<string, string>) => call('DELETE', `/oauth/apps/${appId}/clients/${clientId}`, headers);
  const appNotFound = (id: string) => ({ error: 'not_found', message: `OAuth app ${id} not found` });
  const clientNotFound = (id: string) => ({ error: 'not_found', message: `OAuth client ${id} not found` });

  /** An approved app made through the route: web (profile:read, orders:checkout), desktop and mobile clients. */
  async function createApp(ownerId: string, body: Record<string, unknown> = {}) {
    const res = await stack.app.inject({
      method: 'POST', url: '/oauth/apps', headers: await asUser(ownerId),
      payload: {
        name: 'Notes',
        clients: [
          { platform: 'web', redirectUris: [WEB_URI], scopes: ['profile:read', 'orders:checkout'] },
          { platform: 'desktop', redirectUris: [DESKTOP_URI], scopes: ['profile:read'] },
          { platform: 'mobile', redirectUris: [MOBILE_URI], scopes: ['profile:read', 'mobile:full'] },
        ],
        ...body,
      },
    });
    expect(res.statusCode, res.body).toBe(201);
    const app = res.json().app as AppView;
    if (!body.reserved) {
      const approved = await call('POST', `/oauth/apps/${app.id}/review`, await asUser(admin.id), { decision: 'approve' });
      expect(approved.statusCode, approved.body).toBe(200);
    }
    const client = (platform: string, redirectUri: string): Client => ({ clientId: app.clients.find((c) => c.platform === platform)!.clientId, redirectUri });
    return { app, web: client('web', WEB_URI), desktop: client('desktop', DESKTOP_URI), mobile: client('mobile', MOBILE_URI) };
  }

  async function narrow(appId: string, clientId: string, scopes: string[], as = admin.id) {
    const res = await call('PATCH', `/oauth/apps/${appId}`, await asUser(as), { clients: [{ clientId, scopes }] });
    expect(res.statusCode, res.body).toBe(200);
  }

  const liveTokens = async (clientId: string) => Number((await sql<{ n: string }>`
    select count(*) as n from oauth_tokens t join oauth_clients c on c.id = t.client_pk
    where c.client_id = ${clientId} and t.revoked_at is null`.execute(stack.db)).rows[0]!.n);
  const liveGrants = async (clientId: string) => Number((await sql<{ n: string }>`
    select count(*) as n from oauth_grants g join oauth_clients c on c.id = g.client_pk
    where c.client_id = ${clientId} and g.revoked_at is null`.execute(stack.db)).rows[0]!.n);

  describe('narrowing a client (PATCH /oauth/apps/:appId with fewer scopes)', () => {
    it('takes effect at once: the old token is refused (403 insufficient_scope) for the removed scope and still works for the kept one', async () => {
      const owner = await newUser(stack.db, 'Owner');
      const user = await newUser(stack.db, 'User');
      const { app, web } = await createApp(owner.id);
      const tokens = await obtainTokens(stack, web, user.id, 'profile:read orders:checkout');
      expect(tokens.scope).toBe('profile:read orders:checkout');
      expect((await userinfo(tokens.access_token)).statusCode).toBe(200);
      expect((await myOrders(tokens.access_token)).statusCode).toBe(200);

      await narrow(app.id, web.clientId, ['orders:checkout'], owner.id);

      const refused = await userinfo(tokens.access_token);
      expect(refused.statusCode).toBe(403);
      expect(refused.json()).toEqual({ error: 'insufficient_scope', message: 'insufficient_scope' });
      const kept = await myOrders(tokens.access_token);
      expect(kept.statusCode, kept.body).toBe(200);
      expect(kept.json()).toMatchObject({ success: true, data: { orders: [] } });
      // The user's own list shows what the app may still do.
      const listed = await call('GET', '/my/credentials/oauth-authorizations', await asUser(user.id));
      expect(listed.json().items).toEqual([expect.objectContaining({ app_id: app.id, scopes: ['orders:checkout'], active_token_count: 1 })]);
    });

    it('a refresh returns only the remaining scopes (and so does every token it issues); asking for a removed one is invalid_scope and changes nothing', async () => {
      const owner = await newUser(stack.db, 'Owner');
      const { app, web } = await createApp(owner.id);
      const tokens = await obtainTokens(stack, web, owner.id, 'profile:read orders:checkout');
      await narrow(app.id, web.clientId, ['profile:read']);

      const asked = await expectUnchanged(stack.db, () => refresh(web.clientId, tokens.refresh_token, 'orders:checkout'));
      expect(asked.statusCode).toBe(400);
      expect(asked.json()).toEqual({ error: 'invalid_scope', error_description: 'scope exceeds what the grant and the client now allow' });

      const refreshed = await refresh(web.clientId, tokens.refresh_token);
      expect(refreshed.statusCode, refreshed.body).toBe(200);
      expect(refreshed.json().scope).toBe('profile:read');
      const next = refreshed.json() as { access_token: string; refresh_token: string };
      expect((await userinfo(next.access_token)).statusCode).toBe(200);
      expect((await myOrders(next.access_token)).statusCode).toBe(403);

      // Widening the client again gives the rotated pair nothing back: it was issued with what remained.
      await narrow(app.id, web.clientId, ['profile:read', 'orders:checkout']);
      expect((await myOrders(next.access_token)).statusCode).toBe(403);
      const again = await refresh(web.clientId, next.refresh_token);
      expect(again.json().scope).toBe('profile:read');
    });

    it('a code approved before the narrowing is exchanged for the remaining scopes only', async () => {
      const owner = await newUser(stack.db, 'Owner');
      const { app, web } = await createApp(owner.id);
      const { code, verifier } = await obtainCode(stack, web, owner.id, 'profile:read orders:checkout');
      await narrow(app.id, web.clientId, ['orders:checkout']);
      const res = await tokenRequest(stack, { grant_type: 'authorization_code', client_id: web.clientId, code, redirect_uri: WEB_URI, code_verifier: verifier });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().scope).toBe('orders:checkout');
      expect((await userinfo(res.json().access_token)).statusCode).toBe(403);
    });

    it('a token none of whose scopes the client keeps: every scoped call 403, its refresh invalid_grant and nothing changes', async () => {
      const owner = await newUser(stack.db, 'Owner');
      const { app, web } = await createApp(owner.id);
      const tokens = await obtainTokens(stack, web, owner.id, 'orders:checkout');
      await narrow(app.id, web.clientId, ['profile:read']);
      expect((await myOrders(tokens.access_token)).statusCode).toBe(403);
      expect((await userinfo(tokens.access_token)).statusCode).toBe(403);
      const refused = await expectUnchanged(stack.db, () => refresh(web.clientId, tokens.refresh_token));
      expect(refused.statusCode).toBe(400);
      expect(refused.json()).toEqual({ error: 'invalid_grant', error_description: 'The client no longer has any of the authorized scopes' });
    });

    it('the operator (CLI oauth-token issue) cannot issue a token with a scope the app\'s client does not have (nothing written)', async () => {
      const owner = await newUser(stack.db, 'Owner');
      const { app } = await createApp(owner.id);
      await expectUnchanged(stack.db, () => expect(issueTokensByOperator(stack.db, { appId: app.id, userId: owner.id, scopes: ['profile:read', 'mobile:full'] }))
        .rejects.toMatchObject({ status: 400, error: 'invalid_scope', message: "The app's client does not have scope(s): mobile:full" }));
      const issued = await issueTokensByOperator(stack.db, { appId: app.id, userId: owner.id, scopes: ['orders:checkout'] });
      expect((await myOrders(issued.accessToken)).statusCode).toBe(200);
    });
  });

  describe('DELETE /oauth/apps/:appId/clients/:clientId', () => {
    it('revokes the client\'s grants and tokens at once: their next use is 401, its refresh tokens are refused; the other clients keep working', async () => {
      const owner = await newUser(stack.db, 'Owner');
      const user = await newUser(stack.db, 'User');
      const { app, web, desktop } = await createApp(owner.id);
      const webPairs = [await obtainTokens(stack, web, user.id), await obtainTokens(stack, web, owner.id), await obtainTokens(stack, web, user.id)];
      const desktopPair = await obtainTokens(stack, desktop, user.id);
      // An access token past its expiry is revoked too but not counted: it was no longer usable.
      await stack.db.updateTable('oauth_tokens').set({ expires_at: new Date(Date.now() - 1000) })
        .where('token_hash', '=', sha256Hex(webPairs[2]!.access_token)).execute();

      const res = await removeClient(app.id, web.clientId, await asUser(owner.id));
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({ success: true, revokedCount: 2 });
      expect(await liveTokens(web.clientId)).toBe(0);
      expect(await liveGrants(web.clientId)).toBe(0);

      for (const pair of webPairs.slice(0, 2)) {
        const next = await userinfo(pair.access_token);
        expect(next.statusCode).toBe(401);
        expect(next.json()).toMatchObject({ error: 'Invalid or revoked OAuth token' });
        const refreshed = await expectUnchanged(stack.db, () => refresh(web.clientId, pair.refresh_token));
        expect(refreshed.statusCode).toBe(401);
        expect(refreshed.json()).toEqual({ error: 'invalid_client', error_description: 'Unknown client_id' });
      }
      // The removed client id is unknown at the authorization endpoint too (shown, never redirected).
      const jwt = await stack.deps.idp.issue(user.id, 600);
      const authorize = await expectUnchanged(stack.db, () => stack.app.inject({
        method: 'GET', headers: { cookie: `wf_session=${jwt}`, accept: 'application/json' },
        url: `/oauth/authorize?${authorizeQuery({ ...web, scope: 'profile:read', state: 's', challenge: challengeOf(newVerifier()), method: 'S256' })}`,
      }));
      expect(authorize.statusCode).toBe(400);
      expect(authorize.json()).toMatchObject({ error: 'invalid_client' });

      expect((await userinfo(desktopPair.access_token)).statusCode).toBe(200);
      const shown = await call('GET', `/oauth/apps/${app.id}`, await asUser(owner.id));
      expect((shown.json().app as AppView).clients.map((c) => c.platform)).toEqual(['desktop', 'mobile']);

      const again = await expectUnchanged(stack.db, async () => removeClient(app.id, web.clientId, await asUser(owner.id)));
      expect(again.statusCode).toBe(404);
      expect(again.json()).toEqual(clientNotFound(web.clientId));
      const patched = await expectUnchanged(stack.db, async () =>
        call('PATCH', `/oauth/apps/${app.id}`, await asUser(owner.id), { clients: [{ clientId: web.clientId, scopes: ['profile:read'] }] }));
      expect(patched.statusCode).toBe(404);
    });

    it('the app\'s last client cannot be removed: 409 last_client, nothing changes, its tokens keep working', async () => {
      const owner = await newUser(stack.db, 'Owner');
      const { app, web, desktop, mobile } = await createApp(owner.id);
      const headers = await asUser(owner.id);
      expect((await removeClient(app.id, web.clientId, headers)).json()).toEqual({ success: true, revokedCount: 0 });
      expect((await removeClient(app.id, desktop.clientId, headers)).statusCode).toBe(200);
      const tokens = await obtainTokens(stack, mobile, owner.id);
      const last = await expectUnchanged(stack.db, () => removeClient(app.id, mobile.clientId, headers));
      expect(last.statusCode).toBe(409);
      expect(last.json()).toEqual({ error: 'last_client', message: 'An app keeps at least one client: delete the app instead' });
      expect((await userinfo(tokens.access_token)).statusCode).toBe(200);
    });

    it('two removals at once cannot leave the app without a client', async () => {
      const owner = await newUser(stack.db, 'Owner');
      const { app, web, desktop, mobile } = await createApp(owner.id);
      const headers = await asUser(owner.id);
      await removeClient(app.id, web.clientId, headers);
      const results = await Promise.all([removeClient(app.id, desktop.clientId, headers), removeClient(app.id, mobile.clientId, headers)]);
      expect(results.map((r) => r.statusCode).sort()).toEqual([200, 409]);
      const shown = await call('GET', `/oauth/apps/${app.id}`, headers);
      expect(shown.json().app.clients).toHaveLength(1);
    });

    it('another user\'s app or client, a missing one or a non-UUID app id: 404 as for apps, and nothing changes', async () => {
      const owner = await newUser(stack.db, 'Owner');
      const stranger = await newUser(stack.db, 'Stranger');
      const { app, web } = await createApp(owner.id);
      const theirs = await createApp(stranger.id);
      const tokens = await obtainTokens(stack, web, owner.id);
      const cases: Array<[string, string, string, Record<string, string>]> = [
        [stranger.id, app.id, web.clientId, appNotFound(app.id)],
        // The stranger's own app with the owner's client id: not one of that app's clients.
        [stranger.id, theirs.app.id, web.clientId, clientNotFound(web.clientId)],
        // And the owner's app with the stranger's client id.
        [owner.id, app.id, theirs.web.clientId, clientNotFound(theirs.web.clientId)],
        [owner.id, MISSING, web.clientId, appNotFound(MISSING)],
        [owner.id, 'not-a-uuid', web.clientId, appNotFound('not-a-uuid')],
        [owner.id, app.id, 'wfc-nope', clientNotFound('wfc-nope')],
      ];
      for (const [who, appId, clientId, body] of cases) {
        const res = await expectUnchanged(stack.db, async () => removeClient(appId, clientId, await asUser(who)));
        expect(res.statusCode, `${appId} ${clientId}`).toBe(404);
        expect(res.json()).toEqual(body);
      }
      expect((await userinfo(tokens.access_token)).statusCode).toBe(200);
    });

    it('reserved apps: their owner gets 403 reserved_app; a platform administrator may remove any app\'s client', async () => {
      const owner = await newUser(stack.db, 'Owner');
      const official = await createApp(admin.id, { reserved: true });
      await stack.db.updateTable('oauth_apps').set({ owner_id: owner.id }).where('id', '=', official.app.id).execute();
      const refused = await expectUnchanged(stack.db, async () => removeClient(official.app.id, official.web.clientId, await asUser(owner.id)));
      expect(refused.statusCode).toBe(403);
      expect(refused.json()).toEqual({ error: 'reserved_app', message: 'This is a reserved official app: only platform administrators may change it' });
      expect((await removeClient(official.app.id, official.web.clientId, await asUser(admin.id))).statusCode).toBe(200);

      const ordinary = await createApp(owner.id);
      const byAdmin = await removeClient(ordinary.app.id, ordinary.desktop.clientId, await asUser(admin.id));
      expect(byAdmin.statusCode, byAdmin.body).toBe(200);
    });

    it('JWT only: an API key or an OAuth token (even of that app) gets 403 and nothing changes', async () => {
      const creds = credentialFactory(stack);
      const owner = await newUser(stack.db, 'Owner');
      const { app, web } = await createApp(owner.id);
      const team = await creds.team(owner.id);
      const oauth = await obtainTokens(stack, web, owner.id, 'profile:read orders:checkout');
      for (const token of [(await creds.apiKey(team.id, owner.id)).token, oauth.access_token]) {
        const res = await expectUnchanged(stack.db, () => removeClient(app.id, web.clientId, bearer(token)));
        expect(res.statusCode).toBe(403);
        expect(res.json()).toEqual({ error: 'This endpoint only accepts JWT authentication', message: 'This endpoint only accepts JWT authentication' });
      }
      const none = await expectUnchanged(stack.db, () => removeClient(app.id, web.clientId, {}));
      expect(none.statusCode).toBe(401);
    });

    it('is in the OpenAPI document with its responses', async () => {
      const res = await stack.app.inject({ method: 'GET', url: '/docs/json' });
      const route = res.json().paths['/oauth/apps/{appId}/clients/{clientId}'] as Record<string, { responses: Record<string, unknown> }>;
      expect(Object.keys(route)).toEqual(['delete']);
      expect(Object.keys(route.delete!.responses).sort()).toEqual(['200', '401', '403', '404', '409']);
    });
  });
});
