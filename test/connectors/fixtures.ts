import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { createDocument } from '../../shared/documents/service.js';
import { createBinding } from '../../shared/connectors/bindings.js';
import { createProject } from '../../shared/identity/service.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { startRecordedWorkflow } from '../../shared/workflow-starts/start-path.js';
import { credentialFactory } from '../harness/credentials.js';
import type { Dovecot } from '../harness/dovecot.js';
import { mailGraph } from '../harness/mail.js';
import type { TestStack } from '../harness/stack.js';

// What the polling and dispatch tests start from: a funded team whose owner connected a mailbox of
// the test dovecot (created and tested through the API, so `active`), and a published app that
// reads the mail inputs of CONTRACTS.md "Connectors" (test/harness/mail.ts).

export { mail } from '../harness/mail.js';

export interface MailTenant {
  ownerId: string;
  teamId: string;
  jwt: string;
  mailUser: string;
  connectionId: string;
  documentId: string;
  publish(): Promise<string>;
  /** A binding of the document on the connection; its polling workflow recorded and, with `start`, started. */
  bind(options?: { pollSeconds?: number; start?: boolean }): Promise<string>;
}

export async function allowDovecot(stack: TestStack, dovecot: Dovecot): Promise<void> {
  await upsertSiteSetting(stack.db, 'http_block.allow_hosts', [`${dovecot.host}:${dovecot.port}`]);
  stack.deps.settings.invalidate();
}

export async function mailTenant(stack: TestStack, dovecot: Dovecot, credits = 1_000_000): Promise<MailTenant> {
  const users = credentialFactory(stack);
  const { owner, team } = await users.fundedTenant(credits);
  const jwt = await users.jwt(owner.id, 3600);
  const mailUser = `box-${randomUUID().slice(0, 8)}`;
  await dovecot.users.add(mailUser, 'mail-pass');
  const call = (method: 'POST', url: string, payload?: object) =>
    stack.app.inject({ method, url, payload, headers: { authorization: `Bearer ${jwt}` } });
  const created = await call('POST', '/api/connectors/connections', {
    service: 'imap_mail', credentials: { host: dovecot.host, port: String(dovecot.port), tls: 'false', username: mailUser, password: 'mail-pass' },
  });
  expect(created.statusCode, created.body).toBe(201);
  const connectionId = created.json().data.id as string;
  const tested = await call('POST', `/api/connectors/connections/${connectionId}/test`);
  expect(tested.json(), 'the test dovecot answers the probe').toEqual({ success: true, data: { ok: true } });

  const projectId = (await createProject(stack.db, { teamId: team.id, name: 'Mail apps' })).id;
  const documentId = (await createDocument(stack.db, { kind: 'operator' }, { projectId, name: 'Mail triage', graph: mailGraph })).id;
  const publish = async () => {
    const published = await call('POST', `/documents/${documentId}/publish`, {});
    expect(published.statusCode, published.body).toBe(201);
    return published.json().deployment.id as string;
  };
  return {
    ownerId: owner.id, teamId: team.id, jwt, mailUser, connectionId, documentId, publish,
    async bind({ pollSeconds = 1, start = true } = {}) {
      const { binding, pollStart } = await createBinding(stack.db, { documentId, connectionId, trigger: 'poll_new_email', pollSeconds }, {
        taskQueueSuffix: stack.config.TEMPORAL_TASK_QUEUE_SUFFIX,
      });
      if (start) await startRecordedWorkflow({ db: stack.db, temporal: stack.deps.temporal.client }, pollStart, 'refuse');
      return binding.id;
    },
  };
}
