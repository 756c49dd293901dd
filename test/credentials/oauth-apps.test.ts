import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOAuthApp } from '../../shared/credentials/oauth/apps.js';
import { generateToken } from '../../shared/credentials/tokens.js';
import { runCli } from '../harness/cli.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { until } from '../harness/until.js';
import {
  authorizeQuery, challengeOf, expectUnchanged, newUser, newVerifier, obtainCode, obtainTokens, tokenRequest,
} from './oauth-helpers.js';

const MISSING = '00000000-0000-4000-8000-000000000000';
const jwtOnly = { error: 'This endpoint only accepts JWT authentication', message: 'This endpoint only accepts JWT authentication' };
const WEB_URI = 'https://app.example.com/callback';
const DESKTOP_URI = 'http://127.0.0.1:7777/cb';
const MOBILE_URI = 'com.example.app:/oauth';

interface ClientView { clientId: string; platform: string; redirectUris: string[]; scopes: string[] }
interface AppView {
  id: string; ownerId: string; name: string; logoUrl: string | null; reviewStatus: string; reserved: boolean; offline: boolean;
  reviewNote: string | null; clients: ClientView[];
}

/** OAuth apps over HTTP (issue 38; docs/oauth.md "App lifecycle"). */
describe('OAuth app management over HTTP', () => {
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
  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, headers: Record<string, string>, payload?: unknown) =>
    stack.app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload: payload as object }) });
  const userinfo = (token: string) => stack.app.inject({ method: 'GET', url: '/oauth/userinfo', headers: bearer(token) });
  const refresh = (clientId: string, refreshToken: string) =>
    tokenRequest(stack, { grant_type: 'refresh_token', client_id: clientId, refresh_token: refreshToken });
  const notFoundBody = (id: string) => ({ error: 'not_found', message: `OAuth app ${id} not found` });

  /** Creates an app through the route as `ownerId`, with a web, a desktop and a mobile client. */
  async function createVia(ownerId: string, body: Record<string, unknown> = {}): Promise<AppView> {
    const res = await call('POST', '/oauth/apps', await asUser(ownerId), {
      name: 'Notes', logoUrl: 'https://cdn.example.com/notes.png',
      clients: [
        { platform: 'web', redirectUris: [WEB_URI], scopes: ['profile:read', 'orders:checkout'] },
        { platform: 'desktop', redirectUris: [DESKTOP_URI], scopes: ['profile:read'] },
        { platform: 'mobile', redirectUris: [MOBILE_URI], scopes: ['profile:read', 'mobile:full'] },
      ],
      ...body,
    });
    expect(res.statusCode, res.body).toBe(201);
    return res.json().app as AppView;
  }

  const webClient = (app: AppView) => ({ clientId: app.clients.find((c) => c.platform === 'web')!.clientId, redirectUri: WEB_URI });
  const desktopClient = (app: AppView) => ({ clientId: app.clients.find((c) => c.platform === 'desktop')!.clientId, redirectUri: DESKTOP_URI });

  async function approve(appId: string) {
    const res = await call('POST', `/oauth/apps/${appId}/review`, await asUser(admin.id), { decision: 'approve' });
    expect(res.statusCode, res.body).toBe(200);
  }

  /** The authorize page for `userId`: 200 (consent page) or the redirect with its error. */
  async function authorizeAs(userId: string, client: { clientId: string; redirectUri: string }) {
    const jwt = await stack.deps.idp.issue(userId, 600);
    return stack.app.inject({
      method: 'GET', headers: { cookie: `wf_session=${jwt}` },
      url: `/oauth/authorize?${authorizeQuery({ ...client, scope: 'profile:read', state: 'st', challenge: challengeOf(newVerifier()), method: 'S256' })}`,
    });
  }

  const liveTokenCount = async (appId: string) => Number((await sql<{ n: string }>`
    select count(*) as n from oauth_tokens where app_id = ${appId} and revoked_at is null`.execute(stack.db)).rows[0]!.n);
  const liveGrantCount = async (appId: string) => Number((await sql<{ n: string }>`
    select count(*) as n from oauth_grants where app_id = ${appId} and revoked_at is null`.execute(stack.db)).rows[0]!.n);

  describe('credentials: JWT only', () => {
    it('no credential 401, a bad one 401; API key, OAuth (even mobile:full) and agent tokens 403 on every route; nothing changes', async () => {
      const creds = credentialFactory(stack);
      const owner = await newUser(stack.db, 'Owner');
      const app = await createVia(owner.id);
      const team = await creds.team(owner.id);
      const apiKey = (await creds.apiKey(team.id, owner.id)).token;
      const oauthToken = (await creds.oauthToken(owner.id, ['profile:read', 'mobile:full', 'orders:checkout', 'chat:completions'])).token;
      const agent = (await creds.agentToken(team.id, owner.id, ['GET /oauth/apps', 'POST /oauth/apps', 'DELETE /oauth/apps/*'])).token;
      const routes: Array<['GET' | 'POST' | 'PATCH' | 'DELETE', string, unknown?]> = [
        ['POST', '/oauth/apps', { name: 'X', clients: [{ platform: 'web', redirectUris: [WEB_URI], scopes: ['profile:read'] }] }],
        ['GET', '/oauth/apps'],
        ['GET', `/oauth/apps/${app.id}`],
        ['PATCH', `/oauth/apps/${app.id}`, { name: 'Taken over' }],
        ['POST', `/oauth/apps/${app.id}/clients`, { platform: 'web', redirectUris: [WEB_URI], scopes: ['profile:read'] }],
        ['DELETE', `/oauth/apps/${app.id}`],
        ['POST', `/oauth/apps/${app.id}/review`, { decision: 'approve' }],
        ['POST', `/oauth/apps/${app.id}/offline`],
        ['POST', `/oauth/apps/${app.id}/online`],
      ];
      for (const [method, url, body] of routes) {
        await expectUnchanged(stack.db, async () => {
          const none = await call(method, url, {}, body);
          expect(none.statusCode, `${method} ${url}`).toBe(401);
          expect(none.json()).toMatchObject({ error: 'Missing or invalid authorization header' });
          const bad = await call(method, url, bearer(generateToken('oauthAccess')), body);
          expect(bad.statusCode).toBe(401);
          expect(bad.json()).toMatchObject({ error: 'Invalid or revoked OAuth token' });
          for (const token of [apiKey, oauthToken, agent]) {
            const res = await call(method, url, bearer(token), body);
            expect(res.statusCode, `${method} ${url} with ${token.slice(0, 4)}`).toBe(403);
            expect(res.json()).toEqual(jwtOnly);
          }
        });
      }
    });
  });

  describe('create, list, read', () => {
    it('POST /oauth/apps: one app, a web, a desktop and a mobile client; private to its author', async () => {
      const owner = await newUser(stack.db, 'Dev');
      const app = await createVia(owner.id);
      expect(app).toMatchObject({
        ownerId: owner.id, name: 'Notes', logoUrl: 'https://cdn.example.com/notes.png', reviewStatus: 'private', reserved: false, offline: false,
      });
      expect(app.clients.map((c) => c.platform)).toEqual(['web', 'desktop', 'mobile']);
      expect(new Set(app.clients.map((c) => c.clientId)).size).toBe(3);
      for (const client of app.clients) expect(client.clientId).toMatch(/^wfc-/);
      const rows = await stack.db.selectFrom('oauth_clients').select(['client_id', 'platform', 'redirect_uris', 'allowed_scopes'])
        .where('app_id', '=', app.id).orderBy('created_at').execute();
      expect(rows).toHaveLength(3);
      expect(rows.find((r) => r.platform === 'mobile')).toMatchObject({ redirect_uris: [MOBILE_URI], allowed_scopes: ['profile:read', 'mobile:full'] });
    });

    it('bad input is 400 and creates nothing: no client, a web client on plain http, an unknown scope, an empty name, an unknown field', async () => {
      const owner = await newUser(stack.db);
      const headers = await asUser(owner.id);
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ name: 'A', clients: [] }, 'invalid_request'],
        [{ name: 'A', clients: [{ platform: 'web', redirectUris: ['http://app.example.com/cb'], scopes: ['profile:read'] }] }, 'invalid_request'],
        [{ name: 'A', clients: [{ platform: 'web', redirectUris: [WEB_URI], scopes: ['admin:everything'] }] }, 'invalid_scope'],
        [{ name: '   ', clients: [{ platform: 'web', redirectUris: [WEB_URI], scopes: ['profile:read'] }] }, 'invalid_request'],
        [{ name: 'A', ownerId: admin.id, clients: [{ platform: 'web', redirectUris: [WEB_URI], scopes: ['profile:read'] }] }, 'invalid_request'],
      ];
      for (const [body, error] of cases) {
        const res = await expectUnchanged(stack.db, () => call('POST', '/oauth/apps', headers, body));
        expect(res.statusCode, JSON.stringify(body)).toBe(400);
        expect(res.json()).toMatchObject({ error });
      }
    });

    it('only a platform administrator may create a reserved app (403 otherwise, nothing created); theirs is approved at once', async () => {
      const owner = await newUser(stack.db);
      const body = { name: 'Official', reserved: true, clients: [{ platform: 'web', redirectUris: [WEB_URI], scopes: ['profile:read'] }] };
      const headers = await asUser(owner.id);
      const refused = await expectUnchanged(stack.db, () => call('POST', '/oauth/apps', headers, body));
      expect(refused.statusCode).toBe(403);
      expect(refused.json()).toEqual({ error: 'platform_admin_required', message: 'Only platform administrators may create reserved apps' });
      const official = await createVia(admin.id, body);
      expect(official).toMatchObject({ reserved: true, reviewStatus: 'approved' });
    });

    it('GET /oauth/apps lists only the caller\'s live apps; all=true is for administrators (403 otherwise), with a review-status filter', async () => {
      const mine = await newUser(stack.db, 'Mine');
      const theirs = await newUser(stack.db, 'Theirs');
      const a = await createVia(mine.id, { name: 'First' });
      const b = await createVia(mine.id, { name: 'Second' });
      const other = await createVia(theirs.id, { name: 'Other' });
      const list = await call('GET', '/oauth/apps', await asUser(mine.id));
      expect(list.statusCode).toBe(200);
      expect((list.json().items as AppView[]).map((x) => x.id)).toEqual([b.id, a.id]);

      const refused = await expectUnchanged(stack.db, async () => call('GET', '/oauth/apps?all=true', await asUser(mine.id)));
      expect(refused.statusCode).toBe(403);
      expect(refused.json()).toMatchObject({ error: 'platform_admin_required' });

      await approve(a.id);
      const queue = await call('GET', '/oauth/apps?all=true&reviewStatus=private&limit=200', await asUser(admin.id));
      expect(queue.statusCode).toBe(200);
      const ids = (queue.json().items as AppView[]).map((x) => x.id);
      expect(ids).toContain(b.id);
      expect(ids).toContain(other.id);
      expect(ids).not.toContain(a.id);
      const approved = await call('GET', '/oauth/apps?reviewStatus=approved', await asUser(mine.id));
      expect((approved.json().items as AppView[]).map((x) => x.id)).toEqual([a.id]);
    });

    it('GET /oauth/apps/:appId: the author and administrators; another user\'s app, a missing id and a non-UUID are 404', async () => {
      const owner = await newUser(stack.db);
      const stranger = await newUser(stack.db);
      const app = await createVia(owner.id);
      expect((await call('GET', `/oauth/apps/${app.id}`, await asUser(owner.id))).json().app).toEqual(app);
      expect((await call('GET', `/oauth/apps/${app.id}`, await asUser(admin.id))).statusCode).toBe(200);
      for (const id of [app.id, MISSING, 'not-a-uuid']) {
        const res = await expectUnchanged(stack.db, async () => call('GET', `/oauth/apps/${id}`, await asUser(stranger.id)));
        expect(res.statusCode).toBe(404);
        expect(res.json()).toEqual(notFoundBody(id));
      }
    });
  });

  describe('private until reviewed', () => {
    it('only the author may authorize an unreviewed app; after approval anyone may; sub is the global user id on every client', async () => {
      const owner = await newUser(stack.db, 'Author');
      const user = await newUser(stack.db, 'Someone');
      const app = await createVia(owner.id);
      const ownerTokens = await obtainTokens(stack, webClient(app), owner.id);
      expect((await userinfo(ownerTokens.access_token)).json().sub).toBe(owner.id);

      const refused = await expectUnchanged(stack.db, () => authorizeAs(user.id, webClient(app)));
      expect(refused.statusCode).toBe(302);
      expect(new URL(refused.headers.location as string).searchParams.get('error')).toBe('access_denied');

      await approve(app.id);
      const web = await obtainTokens(stack, webClient(app), user.id);
      const desktop = await obtainTokens(stack, desktopClient(app), user.id);
      expect((await userinfo(web.access_token)).json().sub).toBe(user.id);
      expect((await userinfo(desktop.access_token)).json().sub).toBe(user.id);
    });
  });

  describe('edit', () => {
    it('PATCH: name, logo, a client\'s redirect URIs and scopes; the new URI works at /oauth/authorize, the old one no longer does', async () => {
      const owner = await newUser(stack.db);
      const app = await createVia(owner.id);
      const web = webClient(app);
      const res = await call('PATCH', `/oauth/apps/${app.id}`, await asUser(owner.id), {
        name: 'Notes 2', logoUrl: null, clients: [{ clientId: web.clientId, redirectUris: ['https://app.example.com/v2/cb'], scopes: ['profile:read'] }],
      });
      expect(res.statusCode, res.body).toBe(200);
      const updated = res.json().app as AppView;
      expect(updated).toMatchObject({ name: 'Notes 2', logoUrl: null, reviewStatus: 'private' });
      expect(updated.clients.find((c) => c.clientId === web.clientId)).toMatchObject({ redirectUris: ['https://app.example.com/v2/cb'], scopes: ['profile:read'] });
      expect((await authorizeAs(owner.id, { clientId: web.clientId, redirectUri: 'https://app.example.com/v2/cb' })).statusCode).toBe(200);
      expect((await authorizeAs(owner.id, web)).statusCode).toBe(400);
    });

    it('PATCH refused: another user\'s app 404, an unknown client id 404, a bad redirect URI 400, an unknown field 400; nothing changes', async () => {
      const owner = await newUser(stack.db);
      const stranger = await newUser(stack.db);
      const app = await createVia(owner.id);
      const cases: Array<[string, unknown, number, Record<string, unknown>]> = [
        [stranger.id, { name: 'Mine now' }, 404, notFoundBody(app.id)],
        [owner.id, { clients: [{ clientId: 'wfc-nope', scopes: ['profile:read'] }] }, 404, { error: 'not_found' }],
        [owner.id, { clients: [{ clientId: webClient(app).clientId, redirectUris: ['https://x.example.com/cb#frag'] }] }, 400, { error: 'invalid_request' }],
        [owner.id, { reviewStatus: 'approved' }, 400, { error: 'invalid_request' }],
      ];
      for (const [who, body, status, error] of cases) {
        const res = await expectUnchanged(stack.db, async () => call('PATCH', `/oauth/apps/${app.id}`, await asUser(who), body));
        expect(res.statusCode, JSON.stringify(body)).toBe(status);
        expect(res.json()).toMatchObject(error);
      }
    });

    it('POST /oauth/apps/:appId/clients adds an independent client id; another user\'s app is 404 and gains nothing', async () => {
      const owner = await newUser(stack.db);
      const stranger = await newUser(stack.db);
      const app = await createVia(owner.id);
      const body = { platform: 'desktop', redirectUris: ['http://127.0.0.1:9999/cb'], scopes: ['profile:read'] };
      const refused = await expectUnchanged(stack.db, async () => call('POST', `/oauth/apps/${app.id}/clients`, await asUser(stranger.id), body));
      expect(refused.statusCode).toBe(404);
      expect(refused.json()).toEqual(notFoundBody(app.id));
      const res = await call('POST', `/oauth/apps/${app.id}/clients`, await asUser(owner.id), body);
      expect(res.statusCode, res.body).toBe(201);
      const client = res.json().client as ClientView;
      expect(client).toMatchObject({ platform: 'desktop', redirectUris: ['http://127.0.0.1:9999/cb'], scopes: ['profile:read'] });
      expect((await call('GET', `/oauth/apps/${app.id}`, await asUser(owner.id))).json().app.clients).toHaveLength(4);
      const tokens = await obtainTokens(stack, { clientId: client.clientId, redirectUri: 'http://127.0.0.1:9999/cb' }, owner.id);
      expect((await userinfo(tokens.access_token)).json().sub).toBe(owner.id);
    });
  });

  describe('delete', () => {
    it('the developer deletes: every token of every client answers 401 on its next call, refresh is invalid_grant, the app is gone', async () => {
      const owner = await newUser(stack.db);
      const user = await newUser(stack.db);
      const app = await createVia(owner.id);
      await approve(app.id);
      const a = await obtainTokens(stack, webClient(app), user.id);
      const b = await obtainTokens(stack, desktopClient(app), owner.id);
      expect((await userinfo(a.access_token)).statusCode).toBe(200);

      const res = await call('DELETE', `/oauth/apps/${app.id}`, await asUser(owner.id));
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({ success: true, revokedCount: 2 });
      for (const t of [a, b]) {
        const next = await userinfo(t.access_token);
        expect(next.statusCode).toBe(401);
        expect(next.json()).toMatchObject({ error: 'Invalid or revoked OAuth token' });
      }
      const refused = await expectUnchanged(stack.db, () => refresh(webClient(app).clientId, a.refresh_token));
      expect(refused.statusCode).toBe(400);
      expect(refused.json()).toMatchObject({ error: 'invalid_grant' });
      expect(await liveTokenCount(app.id)).toBe(0);
      expect(await liveGrantCount(app.id)).toBe(0);

      expect((await call('GET', `/oauth/apps/${app.id}`, await asUser(owner.id))).statusCode).toBe(404);
      expect((await call('GET', '/oauth/apps', await asUser(owner.id))).json().items).toEqual([]);
      const again = await expectUnchanged(stack.db, async () => call('DELETE', `/oauth/apps/${app.id}`, await asUser(owner.id)));
      expect(again.statusCode).toBe(404);
    });

    it('another user cannot delete the app (404, nothing changes, the tokens keep working)', async () => {
      const owner = await newUser(stack.db);
      const stranger = await newUser(stack.db);
      const app = await createVia(owner.id);
      const tokens = await obtainTokens(stack, webClient(app), owner.id);
      const res = await expectUnchanged(stack.db, async () => call('DELETE', `/oauth/apps/${app.id}`, await asUser(stranger.id)));
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual(notFoundBody(app.id));
      expect((await userinfo(tokens.access_token)).statusCode).toBe(200);
    });

    it('an app deleted while a refresh holds its token: the refresh finishes first and its new tokens are revoked with the rest', async () => {
      const owner = await newUser(stack.db);
      const app = await createVia(owner.id);
      const web = webClient(app);
      const tokens = await obtainTokens(stack, web, owner.id);
      const token = await stack.db.selectFrom('oauth_tokens').select('id').where('app_id', '=', app.id).where('kind', '=', 'refresh').executeTakeFirstOrThrow();

      // Hold the refresh token's row, so the refresh is caught mid-flight, then let the delete start behind it.
      let release!: () => void;
      const held = new Promise<void>((resolve) => { release = resolve; });
      let locked!: () => void;
      const isLocked = new Promise<void>((resolve) => { locked = resolve; });
      const holder = stack.db.transaction().execute(async (trx) => {
        await trx.selectFrom('oauth_tokens').select('id').where('id', '=', token.id).forUpdate().execute();
        locked();
        await held;
      });
      await isLocked;
      const waitingOnLocks = async () => Number((await sql<{ n: string }>`
        select count(*) as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`.execute(stack.db)).rows[0]!.n);
      const refreshing = refresh(web.clientId, tokens.refresh_token);
      await until(async () => (await waitingOnLocks()) >= 1, 5000, 'the refresh waiting for its token');
      const deleting = call('DELETE', `/oauth/apps/${app.id}`, await asUser(owner.id));
      await until(async () => (await waitingOnLocks()) >= 2, 5000, 'the delete waiting behind the refresh');
      release();
      await holder;
      const [refreshed, deleted] = await Promise.all([refreshing, deleting]);
      expect(deleted.statusCode, deleted.body).toBe(200);

      // Whichever way it went, no usable token exists afterwards.
      const accessTokens = [tokens.access_token];
      const refreshTokens = [tokens.refresh_token];
      if (refreshed.statusCode === 200) {
        accessTokens.push(refreshed.json().access_token);
        refreshTokens.push(refreshed.json().refresh_token);
      } else {
        expect(refreshed.json()).toMatchObject({ error: 'invalid_grant' });
      }
      expect(await liveTokenCount(app.id)).toBe(0);
      expect(await liveGrantCount(app.id)).toBe(0);
      for (const t of accessTokens) expect((await userinfo(t)).statusCode).toBe(401);
      for (const t of refreshTokens) {
        const res = await refresh(web.clientId, t);
        expect(res.statusCode).toBe(400);
        expect(res.json()).toMatchObject({ error: 'invalid_grant' });
      }
    });

    it('an app deleted while a code exchange holds its code: the tokens it issues are revoked with the rest', async () => {
      const owner = await newUser(stack.db);
      const app = await createVia(owner.id);
      const web = webClient(app);
      const { code, verifier } = await obtainCode(stack, web, owner.id);
      let release!: () => void;
      const held = new Promise<void>((resolve) => { release = resolve; });
      let locked!: () => void;
      const isLocked = new Promise<void>((resolve) => { locked = resolve; });
      const holder = stack.db.transaction().execute(async (trx) => {
        await trx.selectFrom('oauth_codes as o').innerJoin('oauth_grants as g', 'g.id', 'o.grant_id').select('o.code_hash')
          .where('g.app_id', '=', app.id).forUpdate('o').execute();
        locked();
        await held;
      });
      await isLocked;
      const waitingOnLocks = async () => Number((await sql<{ n: string }>`
        select count(*) as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`.execute(stack.db)).rows[0]!.n);
      const exchanging = tokenRequest(stack, { grant_type: 'authorization_code', client_id: web.clientId, code, redirect_uri: web.redirectUri, code_verifier: verifier });
      await until(async () => (await waitingOnLocks()) >= 1, 5000, 'the exchange waiting for its code');
      const deleting = call('DELETE', `/oauth/apps/${app.id}`, await asUser(owner.id));
      await until(async () => (await waitingOnLocks()) >= 2, 5000, 'the delete waiting behind the exchange');
      release();
      await holder;
      const [exchanged, deleted] = await Promise.all([exchanging, deleting]);
      expect(deleted.statusCode, deleted.body).toBe(200);
      expect(await liveTokenCount(app.id)).toBe(0);
      if (exchanged.statusCode === 200) {
        expect((await userinfo(exchanged.json().access_token)).statusCode).toBe(401);
        expect((await refresh(web.clientId, exchanged.json().refresh_token)).json()).toMatchObject({ error: 'invalid_grant' });
      } else {
        expect(exchanged.json()).toMatchObject({ error: 'invalid_grant' });
      }
    });

    it('refreshes and deletes racing freely: afterwards no token of the app is live or usable', async () => {
      for (let round = 0; round < 4; round += 1) {
        const owner = await newUser(stack.db);
        const app = await createVia(owner.id);
        const web = webClient(app);
        const pairs = await Promise.all([1, 2, 3].map(() => obtainTokens(stack, web, owner.id)));
        const headers = await asUser(owner.id);
        const results = await Promise.all([
          ...pairs.map((p) => refresh(web.clientId, p.refresh_token)),
          call('DELETE', `/oauth/apps/${app.id}`, headers),
        ]);
        expect(results.at(-1)!.statusCode).toBe(200);
        for (const res of results.slice(0, -1)) {
          if (res.statusCode === 200) expect((await userinfo(res.json().access_token)).statusCode).toBe(401);
          else expect(res.json()).toMatchObject({ error: 'invalid_grant' });
        }
        expect(await liveTokenCount(app.id)).toBe(0);
      }
    });
  });

  describe('review', () => {
    it('a user who is not a platform administrator gets 403, even for their own app and for ids that do not exist; nothing changes', async () => {
      const owner = await newUser(stack.db);
      const app = await createVia(owner.id);
      for (const id of [app.id, MISSING]) {
        const res = await expectUnchanged(stack.db, async () => call('POST', `/oauth/apps/${id}/review`, await asUser(owner.id), { decision: 'approve' }));
        expect(res.statusCode).toBe(403);
        expect(res.json()).toEqual({ error: 'platform_admin_required', message: 'Only platform administrators may review apps' });
      }
      const bad = await expectUnchanged(stack.db, async () => call('POST', `/oauth/apps/${app.id}/review`, await asUser(admin.id), { decision: 'maybe' }));
      expect(bad.statusCode).toBe(400);
      const missing = await expectUnchanged(stack.db, async () => call('POST', `/oauth/apps/${MISSING}/review`, await asUser(admin.id), { decision: 'approve' }));
      expect(missing.statusCode).toBe(404);
    });

    it('reject: the author\'s tokens are revoked, the client id is refused at /oauth/authorize (access_denied, nothing written); an edit resubmits it', async () => {
      const owner = await newUser(stack.db);
      const app = await createVia(owner.id);
      const tokens = await obtainTokens(stack, webClient(app), owner.id);
      const res = await call('POST', `/oauth/apps/${app.id}/review`, await asUser(admin.id), { decision: 'reject', note: 'Logo is not yours' });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ app: { reviewStatus: 'rejected', reviewNote: 'Logo is not yours' }, revokedCount: 1 });
      expect((await userinfo(tokens.access_token)).statusCode).toBe(401);
      expect((await refresh(webClient(app).clientId, tokens.refresh_token)).json()).toMatchObject({ error: 'invalid_grant' });

      for (const who of [owner.id, admin.id]) {
        const refused = await expectUnchanged(stack.db, () => authorizeAs(who, webClient(app)));
        expect(refused.statusCode).toBe(302);
        const location = new URL(refused.headers.location as string);
        expect(location.origin + location.pathname).toBe(WEB_URI);
        expect(Object.fromEntries(location.searchParams)).toEqual({ error: 'access_denied', error_description: 'This app was rejected in review', state: 'st' });
      }
      // The consent form cannot be posted either (the request is checked again on POST).
      const jwt = await stack.deps.idp.issue(owner.id, 600);
      const post = await expectUnchanged(stack.db, () => stack.app.inject({
        method: 'POST', url: '/oauth/authorize', headers: { cookie: `wf_session=${jwt}`, 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({
          client_id: webClient(app).clientId, redirect_uri: WEB_URI, response_type: 'code', scope: 'profile:read', state: 'st',
          code_challenge: challengeOf(newVerifier()), code_challenge_method: 'S256', decision: 'approve', csrf_token: 'x',
        }).toString(),
      }));
      expect(post.statusCode).toBe(303);
      expect(new URL(post.headers.location as string).searchParams.get('error')).toBe('access_denied');

      const edited = await call('PATCH', `/oauth/apps/${app.id}`, await asUser(owner.id), { logoUrl: 'https://cdn.example.com/mine.png' });
      expect(edited.json().app.reviewStatus).toBe('private');
      expect((await authorizeAs(owner.id, webClient(app))).statusCode).toBe(200);
    });
  });

  describe('offline', () => {
    it('an administrator forces it offline (tokens 401, refresh invalid_grant, authorize refused) and back online (authorize works, old tokens stay dead)', async () => {
      const owner = await newUser(stack.db);
      const user = await newUser(stack.db);
      const app = await createVia(owner.id);
      await approve(app.id);
      const tokens = await obtainTokens(stack, webClient(app), user.id);

      const refused = await expectUnchanged(stack.db, async () => call('POST', `/oauth/apps/${app.id}/offline`, await asUser(owner.id)));
      expect(refused.statusCode).toBe(403);
      expect(refused.json()).toMatchObject({ error: 'platform_admin_required' });
      expect((await userinfo(tokens.access_token)).statusCode).toBe(200);

      const off = await call('POST', `/oauth/apps/${app.id}/offline`, await asUser(admin.id));
      expect(off.statusCode, off.body).toBe(200);
      expect(off.json()).toMatchObject({ app: { offline: true }, revokedCount: 1 });
      expect((await userinfo(tokens.access_token)).statusCode).toBe(401);
      expect((await refresh(webClient(app).clientId, tokens.refresh_token)).json()).toMatchObject({ error: 'invalid_grant' });
      const denied = await expectUnchanged(stack.db, () => authorizeAs(user.id, webClient(app)));
      expect(new URL(denied.headers.location as string).searchParams.get('error')).toBe('access_denied');
      expect(await liveTokenCount(app.id)).toBe(0);

      const on = await call('POST', `/oauth/apps/${app.id}/online`, await asUser(admin.id));
      expect(on.statusCode).toBe(200);
      expect(on.json()).toMatchObject({ app: { offline: false, disabledAt: null }, revokedCount: 0 });
      expect((await userinfo(tokens.access_token)).statusCode).toBe(401);
      const fresh = await obtainTokens(stack, webClient(app), user.id);
      expect((await userinfo(fresh.access_token)).statusCode).toBe(200);
    });
  });

  describe('reserved official apps', () => {
    it('the operator\'s app (CLI) is reserved: its owner may read it but not edit or delete it (403); an administrator may', async () => {
      const owner = await newUser(stack.db);
      const cli = await runCli(['oauth-app', 'create', '--owner', owner.id, '--name', 'Official', '--redirect-uri', WEB_URI], stack.env);
      expect(cli.code, cli.stderr).toBe(0);
      const appId = cli.json!.appId as string;
      const read = await call('GET', `/oauth/apps/${appId}`, await asUser(owner.id));
      expect(read.json().app).toMatchObject({ reserved: true, reviewStatus: 'approved' });
      const reserved = { error: 'reserved_app', message: 'This is a reserved official app: only platform administrators may change it' };
      const attempts: Array<['PATCH' | 'POST' | 'DELETE', string, unknown?]> = [
        ['PATCH', `/oauth/apps/${appId}`, { name: 'Mine' }],
        ['POST', `/oauth/apps/${appId}/clients`, { platform: 'web', redirectUris: [WEB_URI], scopes: ['profile:read'] }],
        ['DELETE', `/oauth/apps/${appId}`],
      ];
      for (const [method, url, body] of attempts) {
        const res = await expectUnchanged(stack.db, async () => call(method, url, await asUser(owner.id), body));
        expect(res.statusCode, `${method} ${url}`).toBe(403);
        expect(res.json()).toEqual(reserved);
      }
      const renamed = await call('PATCH', `/oauth/apps/${appId}`, await asUser(admin.id), { name: 'Official 2' });
      expect(renamed.json().app.name).toBe('Official 2');
      expect((await call('DELETE', `/oauth/apps/${appId}`, await asUser(admin.id))).statusCode).toBe(200);
    });

    it('createOAuthApp without reserved is an ordinary app its owner manages', async () => {
      const owner = await newUser(stack.db);
      const { appId } = await createOAuthApp(stack.db, {
        ownerId: owner.id, name: 'Plain', client: { platform: 'web', redirectUris: [WEB_URI], scopes: ['profile:read'] },
      });
      expect((await call('PATCH', `/oauth/apps/${appId}`, await asUser(owner.id), { name: 'Plain 2' })).statusCode).toBe(200);
    });
  });

  describe('CLI user set-admin', () => {
    it('grants and withdraws platform administration; unknown users and bad values are refused', async () => {
      const user = await newUser(stack.db);
      const on = await runCli(['user', 'set-admin', '--user', user.id, '--admin', 'true'], stack.env);
      expect(on.code, on.stderr).toBe(0);
      expect(on.json).toEqual({ userId: user.id, isPlatformAdmin: true });
      const queue = await call('GET', '/oauth/apps?all=true', await asUser(user.id));
      expect(queue.statusCode).toBe(200);
      const off = await runCli(['user', 'set-admin', '--user', user.id, '--admin', 'false'], stack.env);
      expect(off.json).toEqual({ userId: user.id, isPlatformAdmin: false });
      expect((await call('GET', '/oauth/apps?all=true', await asUser(user.id))).statusCode).toBe(403);

      const missing = await runCli(['user', 'set-admin', '--user', MISSING, '--admin', 'true'], stack.env);
      expect(missing.code).not.toBe(0);
      expect(missing.error).toMatchObject({ error: 'not_found' });
      const bad = await runCli(['user', 'set-admin', '--user', user.id, '--admin', 'maybe'], stack.env);
      expect(bad.code).toBe(2);
      const row = await stack.db.selectFrom('users').select('is_platform_admin').where('id', '=', user.id).executeTakeFirstOrThrow();
      expect(row.is_platform_admin).toBe(false);
    });
  });

  it('the OpenAPI document lists the app routes with their schemas', async () => {
    const res = await stack.app.inject({ method: 'GET', url: '/docs/json' });
    expect(res.statusCode).toBe(200);
    const paths = res.json().paths as Record<string, Record<string, { requestBody?: unknown; responses?: Record<string, unknown> }>>;
    expect(Object.keys(paths['/oauth/apps'] ?? {}).sort()).toEqual(['get', 'post']);
    expect(Object.keys(paths['/oauth/apps/{appId}'] ?? {}).sort()).toEqual(['delete', 'get', 'patch']);
    for (const path of ['/oauth/apps/{appId}/clients', '/oauth/apps/{appId}/review', '/oauth/apps/{appId}/offline', '/oauth/apps/{appId}/online']) {
      expect(paths[path], path).toHaveProperty('post');
    }
    expect(paths['/oauth/apps']!.post!.requestBody).toBeTruthy();
    expect(JSON.stringify(paths['/oauth/apps']!.post!.responses!['201'])).toContain('reviewStatus');
    expect(JSON.stringify(paths['/oauth/apps/{appId}/review']!.post!.requestBody)).toContain('reject');
  });
});
