import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDocument } from '../../shared/documents/service.js';
import { createBinding } from '../../shared/connectors/bindings.js';
import { revokeConnection } from '../../shared/connectors/connections.js';
import type { ConnectionStatus } from '../../shared/db/types.js';
import { addTeamMember, createProject } from '../../shared/identity/service.js';
import { runCli } from '../harness/cli.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

/** Tests that start the CLI as a process: each start takes seconds on a loaded machine. */
const CLI_TIMEOUT_MS = 120_000;
const ACCOUNT_LABEL = 'Work mail of alice';

const echoGraph = {
  blocks: [
    { id: 'q', type: 'input', name: 'name', config: { valueType: 'string', required: true } },
    { id: 'o', type: 'output', name: 'result', config: { value: '{{q}}' } },
  ],
  edges: [{ from: 'q', to: 'o' }],
};

describe('connector bindings and the publish check (spec §3.1; CONTRACTS.md "Connectors")', () => {
  let stack: TestStack;
  let users: ReturnType<typeof credentialFactory>;
  let aliceId: string;
  let strangerId: string;
  let projectId: string;
  let adminJwt: string;

  const bindings = () => stack.db.selectFrom('connector_bindings').selectAll().orderBy('id').execute();
  const deploymentsOf = (documentId: string) => stack.db.selectFrom('deployments').select('id').where('document_id', '=', documentId).execute();
  const newDocument = async () => (await createDocument(stack.db, { kind: 'operator' }, { projectId, name: 'Mail reader', graph: echoGraph })).id;
  // Rows written directly: creating and probing connections is covered by connections.test.ts.
  const newConnection = async (userId: string, status: ConnectionStatus = 'pending') => {
    const id = randomUUID();
    await stack.db.insertInto('connector_connections').values({
      id, user_id: userId, service: 'imap_mail', account_label: ACCOUNT_LABEL, status,
      credentials_sealed: JSON.stringify({}), credential_mask: JSON.stringify({ username: 'al•••@example.com', password: '••••••' }),
    }).execute();
    return id;
  };
  const setStatus = (connectionId: string, status: ConnectionStatus) =>
    stack.db.updateTable('connector_connections').set({ status }).where('id', '=', connectionId).execute();
  const publish = (documentId: string) =>
    stack.app.inject({ method: 'POST', url: `/documents/${documentId}/publish`, headers: { authorization: `Bearer ${adminJwt}` }, payload: {} });

  beforeAll(async () => {
    stack = await createTestStack();
    users = credentialFactory(stack);
    const [alice, admin, stranger] = await Promise.all([users.user('alice'), users.user('admin'), users.user('stranger')]);
    [aliceId, strangerId] = [alice.id, stranger.id];
    const team = await users.team(alice.id);
    await addTeamMember(stack.db, { teamId: team.id, userId: admin.id, role: 'admin' });
    projectId = (await createProject(stack.db, { teamId: team.id, name: 'Mail apps' })).id;
    adminJwt = await users.jwt(admin.id);
  });
  afterAll(() => stack?.close());

  it('`connector-binding create` prints { id } and stores the binding, created by the connection\'s owner; bad flags write nothing', async () => {
    const [documentId, connectionId] = await Promise.all([newDocument(), newConnection(aliceId)]);
    const base = ['connector-binding', 'create', '--document', documentId, '--connection', connectionId, '--trigger', 'poll_new_email'];
    const created = await runCli([...base, '--poll-seconds', '30'], stack.env);
    expect(created.code, created.stderr).toBe(0);
    expect(created.json).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expect(await stack.db.selectFrom('connector_bindings').selectAll().where('id', '=', String(created.json!.id)).executeTakeFirst()).toMatchObject({
      document_id: documentId, connection_id: connectionId, trigger: 'poll_new_email', poll_seconds: 30, enabled: true, created_by: aliceId,
    });

    const before = await bindings();
    const [zero, tooLong, notUuid] = await Promise.all([
      runCli([...base, '--poll-seconds', '0'], stack.env),
      runCli([...base, '--poll-seconds', '86401'], stack.env),
      runCli(['connector-binding', 'create', '--document', 'doc-1', '--connection', connectionId, '--trigger', 'poll_new_email'], stack.env),
    ]);
    for (const [result, flag] of [[zero, '--poll-seconds'], [tooLong, '--poll-seconds'], [notUuid, '--document']] as const) {
      expect(result.code).not.toBe(0);
      expect(result.error).toMatchObject({ error: 'invalid_flag', message: expect.stringContaining(flag) });
    }
    expect(await bindings()).toEqual(before);
  }, CLI_TIMEOUT_MS);

  describe('refusals write nothing', () => {
    const refusals: Array<[string, () => Promise<Parameters<typeof createBinding>[1]>, number, string]> = [
      ['an unknown document', async () => ({ documentId: randomUUID(), connectionId: await newConnection(aliceId), trigger: 'poll_new_email' }), 404, 'document_not_found'],
      ['a deleted document', async () => {
        const documentId = await newDocument();
        await stack.db.updateTable('documents').set({ deleted_at: new Date() }).where('id', '=', documentId).execute();
        return { documentId, connectionId: await newConnection(aliceId), trigger: 'poll_new_email' };
      }, 404, 'document_not_found'],
      ['an unknown connection', async () => ({ documentId: await newDocument(), connectionId: randomUUID(), trigger: 'poll_new_email' }), 404, 'connection_not_found'],
      ['a revoked connection', async () => {
        const connectionId = await newConnection(aliceId, 'active');
        await revokeConnection(stack.db, aliceId, connectionId);
        return { documentId: await newDocument(), connectionId, trigger: 'poll_new_email' };
      }, 404, 'connection_not_found'],
      ['a trigger the connector does not offer', async () => ({ documentId: await newDocument(), connectionId: await newConnection(aliceId), trigger: 'webhook' }), 400, 'trigger_not_supported'],
      ["a connection whose owner is not in the document's team", async () => ({ documentId: await newDocument(), connectionId: await newConnection(strangerId, 'active'), trigger: 'poll_new_email' }), 403, 'connection_not_in_team'],
      ['a duplicate (same document, connection and trigger)', async () => {
        const input = { documentId: await newDocument(), connectionId: await newConnection(aliceId), trigger: 'poll_new_email' };
        await createBinding(stack.db, input);
        return { ...input, pollSeconds: 120 };
      }, 409, 'binding_exists'],
    ];
    it.each(refusals)('%s', async (_name, setUp, status, error) => {
      const input = await setUp();
      const before = await bindings();
      await expect(createBinding(stack.db, input)).rejects.toMatchObject({ status, error });
      expect(await bindings()).toEqual(before);
    });
  });

  describe('publishing (POST /documents/:documentId/publish as a team admin)', () => {
    it('is 409 connection_not_active while the bound connection is pending or invalid, with no deployment written; 201 once it is active', async () => {
      const [documentId, connectionId] = await Promise.all([newDocument(), newConnection(aliceId, 'pending')]);
      await createBinding(stack.db, { documentId, connectionId, trigger: 'poll_new_email' });

      for (const status of ['pending', 'invalid'] as const) {
        await setStatus(connectionId, status);
        const refused = await publish(documentId);
        expect(refused.statusCode).toBe(409);
        expect(refused.json()).toMatchObject({ error: 'connection_not_active', message: expect.stringContaining('1 trigger binding(s)') });
        // Counts only: no account label, mask or id of the connection.
        for (const secret of [ACCOUNT_LABEL, 'al•••', connectionId]) expect(refused.body).not.toContain(secret);
        expect(await deploymentsOf(documentId)).toEqual([]);
      }

      await setStatus(connectionId, 'active');
      const published = await publish(documentId);
      expect(published.statusCode, published.body).toBe(201);
      expect((await deploymentsOf(documentId)).length).toBe(1);
    });

    it('counts every blocking binding; a disabled binding does not block', async () => {
      const documentId = await newDocument();
      const [pendingA, pendingB] = await Promise.all([newConnection(aliceId), newConnection(aliceId)]);
      const [first] = await Promise.all([
        createBinding(stack.db, { documentId, connectionId: pendingA, trigger: 'poll_new_email' }),
        createBinding(stack.db, { documentId, connectionId: pendingB, trigger: 'poll_new_email' }),
      ]);
      const refused = await publish(documentId);
      expect([refused.statusCode, refused.json().error]).toEqual([409, 'connection_not_active']);
      expect(refused.json().message).toContain('2 trigger binding(s) of this document use 2 connection(s)');

      await stack.db.updateTable('connector_bindings').set({ enabled: false }).where('document_id', '=', documentId).where('id', '<>', first.binding.id).execute();
      expect((await publish(documentId)).statusCode).toBe(409);
      await stack.db.updateTable('connector_bindings').set({ enabled: false }).where('id', '=', first.binding.id).execute();
      const published = await publish(documentId);
      expect(published.statusCode, published.body).toBe(201);
      expect((await deploymentsOf(documentId)).length).toBe(1);
    });

    it('a document without bindings publishes as before', async () => {
      const published = await publish(await newDocument());
      expect(published.statusCode, published.body).toBe(201);
    });
  });
});
