import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setConnector } from '../../shared/connectors/catalog.js';
import { runCli } from '../harness/cli.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

/** Tests that start the CLI as a process: each start takes seconds on a loaded machine. */
const CLI_TIMEOUT_MS = 120_000;

describe('connector catalog (spec §2.4, §4.12; CONTRACTS.md "Connectors")', () => {
  let stack: TestStack;
  let jwt: string;
  const catalog = () => stack.app.inject({ method: 'GET', url: '/api/connectors/catalog', headers: { authorization: `Bearer ${jwt}` } });

  beforeAll(async () => {
    stack = await createTestStack();
    const user = await credentialFactory(stack).user('catalog');
    jwt = await stack.deps.idp.issue(user.id, 600);
    // A connector waiting for review: in the table, never in the catalog.
    await stack.db.insertInto('connectors').values({
      id: randomUUID(), service: 'pending_thing', display_name: 'Pending', auth_type: 'custom_credential', credential_fields: JSON.stringify([]), status: 'pending',
    }).execute();
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('lists the approved imap_mail connector in the 2.4 shape, and not the pending one', async () => {
    const response = await catalog();
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body).toEqual({
      success: true,
      data: [{
        id: expect.stringMatching(/^[0-9a-f-]{36}$/), service: 'imap_mail', displayName: 'Mail (IMAP)', description: expect.any(String), categories: ['mail'],
        authType: 'custom_credential',
        credentialFields: [
          { key: 'host', label: 'IMAP server', type: 'text', secret: false, required: true },
          { key: 'port', label: 'Port', type: 'text', secret: false, required: true },
          { key: 'tls', label: 'TLS ("true" or "false")', type: 'text', secret: false, required: true },
          { key: 'username', label: 'User name', type: 'text', secret: false, required: true },
          { key: 'password', label: 'Password', type: 'password', secret: true, required: true },
        ],
        supportedTriggers: ['poll_new_email'], status: 'approved', circuitBroken: false, creditMultiplier: 1,
      }],
    });
    expect(typeof body.data[0].creditMultiplier).toBe('number');
  });

  it('connector set (CLI) rejects a connector: it leaves the catalog; approving and tripping the breaker come back in the output', async () => {
    try {
      const rejected = await runCli(['connector', 'set', '--service', 'imap_mail', '--status', 'rejected', '--circuit-broken', 'true'], stack.env);
      expect(rejected.code, rejected.stderr).toBe(0);
      expect(rejected.json).toEqual({ service: 'imap_mail', status: 'rejected', circuitBroken: true });
      expect(await stack.db.selectFrom('connectors').select(['status', 'circuit_broken']).where('service', '=', 'imap_mail').executeTakeFirst())
        .toEqual({ status: 'rejected', circuit_broken: true });
      expect((await catalog()).json()).toEqual({ success: true, data: [] });

      // Without --circuit-broken the breaker is left as it is.
      expect(await setConnector(stack.db, { service: 'imap_mail', status: 'approved' })).toEqual({ service: 'imap_mail', status: 'approved', circuitBroken: true });
      expect((await catalog()).json().data).toMatchObject([{ service: 'imap_mail', status: 'approved', circuitBroken: true }]);
    } finally {
      await setConnector(stack.db, { service: 'imap_mail', status: 'approved', circuitBroken: false });
    }
  }, CLI_TIMEOUT_MS);

  it('connector set refuses an unknown service and a bad status, changing nothing', async () => {
    const before = await stack.db.selectFrom('connectors').selectAll().orderBy('service').execute();
    const [unknown, badStatus] = await Promise.all([
      runCli(['connector', 'set', '--service', 'no_such', '--status', 'approved'], stack.env),
      runCli(['connector', 'set', '--service', 'imap_mail', '--status', 'live'], stack.env),
    ]);
    expect(unknown.code).not.toBe(0);
    expect(unknown.error).toMatchObject({ error: 'connector_not_found' });
    expect(badStatus.code).not.toBe(0);
    expect(badStatus.error).toMatchObject({ error: 'invalid_flag', message: expect.stringContaining('--status') });
    expect(await stack.db.selectFrom('connectors').selectAll().orderBy('service').execute()).toEqual(before);
  }, CLI_TIMEOUT_MS);

  it('answers 401 `unauthorized` without a credential', async () => {
    const response = await stack.app.inject({ method: 'GET', url: '/api/connectors/catalog' });
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual({ error: 'unauthorized' });
  });
});
