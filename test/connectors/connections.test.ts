import { randomUUID } from 'node:crypto';
import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../api/app.js';
import { setConnector } from '../../shared/connectors/catalog.js';
import { sealContext } from '../../shared/connectors/connections.js';
import { findFreePort } from '../../shared/ports.js';
import { createKeyRing } from '../../shared/secrets/key-ring.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { credentialFactory } from '../harness/credentials.js';
import { startDovecot, type Dovecot } from '../harness/dovecot.js';
import { withSetting } from '../harness/settings.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

const PASSWORD = 'S3cret-Pa55-for-imap';
const imapCredentials = (overrides: Record<string, unknown> = {}) =>
  ({ host: 'mail.example.com', port: '993', tls: 'true', username: 'alice@example.com', password: PASSWORD, ...overrides });

describe('connector connections (spec §2.5, §3.1, §4.12, §7.7; CONTRACTS.md "Connectors")', () => {
  let stack: TestStack;
  let users: ReturnType<typeof credentialFactory>;
  let alice: { id: string; jwt: string };
  let bob: { id: string; jwt: string };
  let dovecot: Dovecot;

  const call = (jwt: string | null, options: InjectOptions) =>
    stack.app.inject({ ...options, headers: { ...options.headers, ...(jwt ? { authorization: `Bearer ${jwt}` } : {}) } });
  const create = (jwt: string, body: unknown) => call(jwt, { method: 'POST', url: '/api/connectors/connections', payload: body as object });
  const list = (jwt: string) => call(jwt, { method: 'GET', url: '/api/connectors/connections' });
  const test = (jwt: string, id: string) => call(jwt, { method: 'POST', url: `/api/connectors/connections/${id}/test` });
  const remove = (jwt: string, id: string) => call(jwt, { method: 'DELETE', url: `/api/connectors/connections/${id}` });
  const rows = () => stack.db.selectFrom('connector_connections').selectAll().orderBy('id').execute();
  const rowOf = (id: string) => stack.db.selectFrom('connector_connections').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const newUser = async (label: string) => {
    const user = await users.user(label);
    return { id: user.id, jwt: await stack.deps.idp.issue(user.id, 600) };
  };
  const connect = async (who: { jwt: string }, credentials: Record<string, unknown>) => {
    const response = await create(who.jwt, { service: 'imap_mail', credentials });
    expect(response.statusCode, response.body).toBe(201);
    return response.json().data.id as string;
  };

  beforeAll(async () => {
    [stack, dovecot] = await Promise.all([createTestStack(), startDovecot()]);
    users = credentialFactory(stack);
    [alice, bob] = await Promise.all([newUser('alice'), newUser('bob')]);
  });
  afterAll(async () => {
    await Promise.all([stack?.close(), dovecot?.stop()]);
  });

  describe('create and list', () => {
    it('creates a pending connection whose responses carry the mask only: never the password, never the sealed values', async () => {
      const response = await create(alice.jwt, { service: 'imap_mail', credentials: imapCredentials(), accountLabel: 'Work mail' });
      expect(response.statusCode).toBe(201);
      const created = response.json();
      expect(created).toEqual({
        success: true,
        data: {
          id: expect.stringMatching(/^[0-9a-f-]{36}$/), service: 'imap_mail', accountLabel: 'Work mail',
          credentialMask: { host: 'mail.example.com', port: '993', tls: 'true', username: 'al•••@example.com', password: '••••••' },
          status: 'pending', lastVerifiedAt: null, lastErrorCode: null, createdAt: expect.any(String), updatedAt: expect.any(String),
        },
      });
      const row = await rowOf(created.data.id);
      expect(row).toMatchObject({ user_id: alice.id, status: 'pending', revoked_at: null });
      // Each field sealed for its own row and field: it opens with that context only.
      expect(Object.keys(row.credentials_sealed).sort()).toEqual(['host', 'password', 'port', 'tls', 'username']);
      expect(stack.deps.secrets.open(row.credentials_sealed.password!, sealContext(row.id, 'password'))).toBe(PASSWORD);
      expect(() => stack.deps.secrets.open(row.credentials_sealed.password!, sealContext(row.id, 'username'))).toThrow();
      expect(() => stack.deps.secrets.open(row.credentials_sealed.password!, sealContext(randomUUID(), 'password'))).toThrow();

      const listed = await list(alice.jwt);
      expect(listed.statusCode).toBe(200);
      expect(listed.json().data).toContainEqual(created.data);
      for (const text of [response.body, listed.body]) {
        expect(text).not.toContain(PASSWORD);
        expect(text).not.toContain('alice@example.com');
        for (const sealed of Object.values(row.credentials_sealed)) expect(text).not.toContain(sealed);
      }
    });

    it('without accountLabel, labels the account with the connector name and the masked user name', async () => {
      const id = await connect(alice, imapCredentials({ username: 'bo' }));
      expect((await rowOf(id)).account_label).toBe('Mail (IMAP): b•••');
    });

    it('lists only the caller\'s own connections', async () => {
      const bobsId = await connect(bob, imapCredentials({ username: 'bob@example.com' }));
      const [forBob, forAlice] = await Promise.all([list(bob.jwt), list(alice.jwt)]);
      expect(forBob.json().data.map((c: { id: string }) => c.id)).toEqual([bobsId]);
      expect(forAlice.json().data.map((c: { id: string }) => c.id)).not.toContain(bobsId);
      expect(forAlice.json().data.length).toBeGreaterThan(0);
    });
  });

  describe('bad input changes nothing', () => {
    const refusals: Array<[string, unknown, number, Record<string, unknown>]> = [
      ['a missing credential field', { service: 'imap_mail', credentials: imapCredentials({ password: undefined }) }, 400, { error: 'credential_field_missing', field: 'password' }],
      ['a blank credential field', { service: 'imap_mail', credentials: imapCredentials({ username: '  ' }) }, 400, { error: 'credential_field_missing', field: 'username' }],
      ['a port out of range', { service: 'imap_mail', credentials: imapCredentials({ port: '70000' }) }, 400, { error: 'invalid_body' }],
      ['a port that is no number', { service: 'imap_mail', credentials: imapCredentials({ port: '99a' }) }, 400, { error: 'invalid_body' }],
      ['tls other than "true"/"false"', { service: 'imap_mail', credentials: imapCredentials({ tls: 'yes' }) }, 400, { error: 'invalid_body' }],
      ['a URL as host', { service: 'imap_mail', credentials: imapCredentials({ host: 'http://evil@127.0.0.1/' }) }, 400, { error: 'invalid_body' }],
      ['a credential value that is not a string', { service: 'imap_mail', credentials: imapCredentials({ port: 993 }) }, 400, { error: 'invalid_body' }],
      ['a key that is not a credential field', { service: 'imap_mail', credentials: imapCredentials({ token: 'x' }) }, 400, { error: 'invalid_body' }],
      ['credentials that are not an object', { service: 'imap_mail', credentials: 'user:pass' }, 400, { error: 'invalid_body' }],
      ['no service', { credentials: imapCredentials() }, 400, { error: 'invalid_body' }],
      ['an unknown connector', { service: 'no_such_connector', credentials: imapCredentials() }, 404, { error: 'connector_not_found' }],
    ];
    it.each(refusals)('%s', async (_name, body, status, error) => {
      const before = await rows();
      const response = await create(alice.jwt, body);
      expect(response.statusCode).toBe(status);
      expect(response.json()).toEqual(error);
      expect(await rows()).toEqual(before);
    });

    it('a body that is not JSON is 400 `invalid_body` (spec §7.7), not the global invalid_json', async () => {
      const before = await rows();
      const response = await stack.app.inject({
        method: 'POST', url: '/api/connectors/connections', payload: '{"service": "imap_mail", ',
        headers: { authorization: `Bearer ${alice.jwt}`, 'content-type': 'application/json' },
      });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({ error: 'invalid_body' });
      expect(await rows()).toEqual(before);
    });

    it('a connector that is not approved is 403 `connector_not_approved`; a tripped breaker 503 `connector_circuit_broken`', async () => {
      const before = await rows();
      try {
        await setConnector(stack.db, { service: 'imap_mail', status: 'pending' });
        const notApproved = await create(alice.jwt, { service: 'imap_mail', credentials: imapCredentials() });
        expect(notApproved.statusCode).toBe(403);
        expect(notApproved.json()).toEqual({ error: 'connector_not_approved' });
        await setConnector(stack.db, { service: 'imap_mail', status: 'approved', circuitBroken: true });
        const broken = await create(alice.jwt, { service: 'imap_mail', credentials: imapCredentials() });
        expect(broken.statusCode).toBe(503);
        expect(broken.json()).toEqual({ error: 'connector_circuit_broken' });
      } finally {
        await setConnector(stack.db, { service: 'imap_mail', status: 'approved', circuitBroken: false });
      }
      expect(await rows()).toEqual(before);
    });

    it('without an encryption key (production without SECRETS_KEY) create is 503 `encryption_not_configured` and stores nothing', async () => {
      const keyless = await buildApp({ ...stack.deps, secrets: createKeyRing(null) }, { logger: false });
      try {
        const before = await rows();
        const response = await keyless.inject({
          method: 'POST', url: '/api/connectors/connections', headers: { authorization: `Bearer ${alice.jwt}` },
          payload: { service: 'imap_mail', credentials: imapCredentials() },
        });
        expect(response.statusCode).toBe(503);
        expect(response.json()).toEqual({ error: 'encryption_not_configured' });
        expect(await rows()).toEqual(before);
      } finally {
        await keyless.close();
      }
    });

    it('someone else\'s connection, a malformed id and an unknown id are the same 404 `connection_not_found` for test and delete', async () => {
      const id = await connect(alice, imapCredentials());
      const before = await rows();
      for (const [who, target] of [[bob, id], [alice, 'not-a-uuid'], [alice, randomUUID()]] as const) {
        for (const response of [await test(who.jwt, target), await remove(who.jwt, target)]) {
          expect(response.statusCode).toBe(404);
          expect(response.json()).toEqual({ error: 'connection_not_found' });
        }
      }
      expect(await rows()).toEqual(before);
    });

    it('every route refuses an API key, an OAuth token and an agent token (403) and a missing credential (401 `unauthorized`)', async () => {
      const id = await connect(alice, imapCredentials());
      const team = await users.team(alice.id);
      const [apiKey, oauth, agent] = await Promise.all([
        users.apiKey(team.id, alice.id), users.oauthToken(alice.id, ['mobile:full', 'profile:read']),
        users.agentToken(team.id, alice.id, ['*']),
      ]);
      const routes: InjectOptions[] = [
        { method: 'GET', url: '/api/connectors/catalog' },
        { method: 'GET', url: '/api/connectors/connections' },
        { method: 'POST', url: '/api/connectors/connections', payload: { service: 'imap_mail', credentials: imapCredentials() } },
        { method: 'POST', url: `/api/connectors/connections/${id}/test` },
        { method: 'DELETE', url: `/api/connectors/connections/${id}` },
      ];
      const before = await rows();
      for (const route of routes) {
        const anonymous = await call(null, route);
        expect(anonymous.statusCode, `${route.method} ${route.url}`).toBe(401);
        expect(anonymous.json()).toEqual({ error: 'unauthorized' });
        for (const token of [apiKey.token, oauth.token, agent.token]) {
          const refused = await call(token, route);
          expect(refused.statusCode, `${route.method} ${route.url}`).toBe(403);
          expect(refused.json()).toEqual({ error: expect.any(String) });
        }
      }
      expect(await rows()).toEqual(before);
    });
  });

  describe('test (probe) and the state table of §3.1', () => {
    /** Lets the guard through to the test dovecot only (and to `extra`), as an operator would. */
    const allowHosts = async (...entries: string[]) => {
      await upsertSiteSetting(stack.db, 'http_block.allow_hosts', entries);
      stack.deps.settings.invalidate();
    };
    const dovecotCredentials = (user: string, password: string) =>
      imapCredentials({ host: dovecot.host, port: String(dovecot.port), tls: 'false', username: user, password });

    it('a loopback host is refused by the SSRF guard (gateway_unreachable, status unchanged) until http_block.allow_hosts allows it; then success → active', async () => {
      const user = `u${randomUUID().slice(0, 8)}`;
      await dovecot.users.add(user, 'right-password');
      const owner = await newUser('prober');
      const id = await connect(owner, dovecotCredentials(user, 'right-password'));
      await allowHosts();

      const refused = await test(owner.jwt, id);
      expect(refused.statusCode).toBe(200);
      expect(refused.json()).toEqual({ success: true, data: { ok: false, errorCode: 'gateway_unreachable' } });
      expect(await rowOf(id)).toMatchObject({ status: 'pending', last_error_code: 'gateway_unreachable', last_verified_at: null });

      await allowHosts(`127.0.0.1:${dovecot.port}`);
      const before = Date.now();
      const ok = await test(owner.jwt, id);
      expect(ok.json()).toEqual({ success: true, data: { ok: true } });
      const row = await rowOf(id);
      expect(row).toMatchObject({ status: 'active', last_error_code: null });
      expect(row.last_verified_at!.getTime()).toBeGreaterThanOrEqual(before - 1000);
      const listed = (await list(owner.jwt)).json().data[0];
      expect(listed).toMatchObject({ id, status: 'active', lastErrorCode: null, lastVerifiedAt: row.last_verified_at!.toISOString() });
    });

    it('a wrong password → credential_invalid → invalid', async () => {
      const user = `u${randomUUID().slice(0, 8)}`;
      await dovecot.users.add(user, 'right-password');
      await allowHosts(`127.0.0.1:${dovecot.port}`);
      const owner = await newUser('wrong');
      const id = await connect(owner, dovecotCredentials(user, 'wrong-password'));
      const response = await test(owner.jwt, id);
      expect(response.json()).toEqual({ success: true, data: { ok: false, errorCode: 'credential_invalid' } });
      expect(await rowOf(id)).toMatchObject({ status: 'invalid', last_error_code: 'credential_invalid', last_verified_at: null });
    });

    it('the server down → gateway_unreachable, an active connection stays active', async () => {
      const closedPort = await findFreePort();
      await allowHosts(`127.0.0.1:${closedPort}`);
      const owner = await newUser('down');
      const id = await connect(owner, imapCredentials({ host: '127.0.0.1', port: String(closedPort), tls: 'false' }));
      const verifiedAt = new Date(Date.now() - 3600_000);
      await stack.db.updateTable('connector_connections').set({ status: 'active', last_verified_at: verifiedAt }).where('id', '=', id).execute();
      const response = await test(owner.jwt, id);
      expect(response.json()).toEqual({ success: true, data: { ok: false, errorCode: 'gateway_unreachable' } });
      expect(await rowOf(id)).toMatchObject({ status: 'active', last_error_code: 'gateway_unreachable', last_verified_at: verifiedAt });
    });

    it('the 11th test in a minute is 429 with Retry-After and changes nothing; the setting lowers the budget', async () => {
      await allowHosts();
      const owner = await newUser('eager');
      const id = await connect(owner, imapCredentials({ host: '127.0.0.1', tls: 'false' }));
      for (let i = 0; i < 10; i++) expect((await test(owner.jwt, id)).statusCode).toBe(200);
      const before = await rowOf(id);
      const limited = await test(owner.jwt, id);
      expect(limited.statusCode).toBe(429);
      expect(limited.json()).toEqual({ error: 'rate_limited' });
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      expect(await rowOf(id)).toEqual(before);

      await withSetting(stack, 'CONNECTOR_TEST_RATE_LIMIT_PER_MINUTE', 2, async () => {
        const other = await newUser('eager2');
        const otherId = await connect(other, imapCredentials({ host: '127.0.0.1', tls: 'false' }));
        expect((await test(other.jwt, otherId)).statusCode).toBe(200);
        expect((await test(other.jwt, otherId)).statusCode).toBe(200);
        expect((await test(other.jwt, otherId)).statusCode).toBe(429);
      });
    });

    it('delete → revoked, still listed, credentials dropped; test afterwards 404; delete again changes nothing', async () => {
      const owner = await newUser('leaver');
      const id = await connect(owner, imapCredentials());
      const deleted = await remove(owner.jwt, id);
      expect(deleted.statusCode).toBe(200);
      expect(deleted.json()).toEqual({ success: true });
      const row = await rowOf(id);
      expect(row).toMatchObject({ status: 'revoked', credentials_sealed: {} });
      expect(row.revoked_at).toBeInstanceOf(Date);
      expect((await list(owner.jwt)).json().data).toMatchObject([{ id, status: 'revoked', credentialMask: { password: '••••••' } }]);

      const retest = await test(owner.jwt, id);
      expect(retest.statusCode).toBe(404);
      expect(retest.json()).toEqual({ error: 'connection_not_found' });
      expect((await remove(owner.jwt, id)).json()).toEqual({ success: true });
      expect(await rowOf(id)).toEqual(row);
    });
  });
});
