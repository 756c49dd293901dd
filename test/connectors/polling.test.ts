import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setConnector } from '../../shared/connectors/catalog.js';
import { pollBinding } from '../../shared/connectors/polling.js';
import { findFreePort } from '../../shared/ports.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import { runCli } from '../harness/cli.js';
import { startDovecot, type Dovecot } from '../harness/dovecot.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { until } from '../harness/until.js';
import { allowDovecot, mail, mailTenant, type MailTenant } from './fixtures.js';

// The whole loop on real parts (issue 23 "Done when"): dovecot on 127.0.0.1, the polling workflow
// `connector-poll-<bindingId>` on a real worker, its dispatcher calling this API over HTTP, and the
// runs it starts completing on the same worker.

const CLI_TIMEOUT_MS = 120_000;

describe('connector polling on Temporal (issue 23 items 4 and 5)', () => {
  let stack: TestStack;
  let dovecot: Dovecot;

  const runsOf = (documentId: string) => stack.db.selectFrom('runs').selectAll().where('document_id', '=', documentId).orderBy('created_at').execute();
  const eventsOf = (connectionId: string) => stack.db.selectFrom('connector_events').selectAll().where('connection_id', '=', connectionId).orderBy('uid').execute();
  const cursorOf = (bindingId: string) => stack.db.selectFrom('connector_poll_cursors').selectAll().where('binding_id', '=', bindingId).executeTakeFirst();
  const pollDeps = () => ({ db: stack.db, secrets: stack.deps.secrets, settings: stack.deps.settings });
  const handleOf = (bindingId: string) => stack.deps.temporal.client.workflow.getHandle(workflowIds.connectorPoll(bindingId));
  /** A published app bound to a fresh mailbox, polling every `pollSeconds`, past its first poll (the baseline). */
  async function polling(pollSeconds = 1): Promise<MailTenant & { bindingId: string }> {
    const tenant = await mailTenant(stack, dovecot);
    await tenant.publish();
    const bindingId = await tenant.bind({ pollSeconds });
    await until(() => cursorOf(bindingId), 30_000, 'the first poll (the baseline)');
    return { ...tenant, bindingId };
  }
  const runCount = async (documentId: string, count: number, timeoutMs: number) =>
    until(async () => ((await runsOf(documentId)).length >= count ? runsOf(documentId) : null), timeoutMs, `${count} run(s)`, 200);

  beforeAll(async () => {
    const port = await findFreePort();
    [stack, dovecot] = await Promise.all([createTestStack({ INTERNAL_API_URL: `http://127.0.0.1:${port}` }), startDovecot()]);
    await stack.app.listen({ port, host: '127.0.0.1' });
    await stack.startWorker();
    await allowDovecot(stack, dovecot);
  });
  afterAll(async () => {
    await Promise.all([stack?.close(), dovecot?.stop()]);
  });

  it('a mail appended to the inbox produces exactly one run within one poll interval, found from the polling workflow in Temporal', async () => {
    const tenant = await polling(2);
    await dovecot.appendMessage(tenant.mailUser, mail('Invoice 42', { body: 'Please pay' }));
    const appended = Date.now();
    const [run] = await runCount(tenant.documentId, 1, 2_000 + 5_000);
    expect(Date.now() - appended).toBeLessThan(2_000 + 5_000);
    expect(run!.inputs).toMatchObject({
      subject: 'Invoice 42', from: '"Ann Sender" <ann@example.com>', text: 'Please pay\n',
      _trigger: { source: 'connector', service: 'imap_mail', trigger: 'poll_new_email', connection_id: tenant.connectionId },
    });
    const completed = await until(async () => {
      const row = await stack.db.selectFrom('runs').select('status').where('id', '=', run!.id).executeTakeFirstOrThrow();
      return row.status === 'completed' ? row : null;
    }, 30_000, 'the run completes');
    expect(completed.status).toBe('completed');

    // The polling workflow's history holds the dispatch that started it, naming `app-run-<runId>`.
    const history = JSON.stringify(await handleOf(tenant.bindingId).fetchHistory());
    const results = [...history.matchAll(/"data":"([A-Za-z0-9+/=]+)"/g)].map(([, data]) => Buffer.from(data!, 'base64').toString());
    expect(results).toContainEqual(expect.stringContaining(`"workflowId":"${workflowIds.appRun(run!.id)}"`));
    const description = await stack.deps.temporal.client.workflow.getHandle(workflowIds.appRun(run!.id)).describe();
    expect(description.searchAttributes).toMatchObject({ WfTriggerSource: ['connector'], WfDocumentId: [tenant.documentId] });

    // Later polls find nothing new: still one run, one ledger row.
    await new Promise((resolve) => setTimeout(resolve, 4_500));
    expect(await runsOf(tenant.documentId)).toHaveLength(1);
    expect(await eventsOf(tenant.connectionId)).toHaveLength(1);
  });

  it('100 mails appended at once produce exactly 100 runs, one per mail', async () => {
    const tenant = await polling(1);
    const subjects = Array.from({ length: 100 }, (_, i) => `Batch mail ${i + 1}`);
    await dovecot.appendMessages(tenant.mailUser, subjects.map((s) => mail(s)));
    const runs = await runCount(tenant.documentId, 100, 120_000);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const settled = await runsOf(tenant.documentId);
    expect(settled).toHaveLength(100);
    expect(new Set(settled.map((r) => (r.inputs as { subject: string }).subject))).toEqual(new Set(subjects));
    expect(new Set(runs.map((r) => (r.inputs as { messageId: string }).messageId)).size).toBe(100);
    const dispatches = await stack.db.selectFrom('connector_dispatches').select(['status']).where('binding_id', '=', tenant.bindingId).execute();
    expect(dispatches.map((d) => d.status)).toEqual(Array(100).fill('dispatched'));
  }, 180_000);

  it('overlapping polls (the timer, `connector poll` and direct polls at once) record and run the same mail once', async () => {
    const tenant = await polling(1);
    await dovecot.appendMessage(tenant.mailUser, mail('Seen by everyone'));
    const [cli, ...direct] = await Promise.all([
      runCli(['connector', 'poll', '--binding', tenant.bindingId], stack.env),
      pollBinding(pollDeps(), tenant.bindingId), pollBinding(pollDeps(), tenant.bindingId), pollBinding(pollDeps(), tenant.bindingId),
    ]);
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.json).toEqual({ newEvents: expect.any(Number) });
    const newEvents = [Number(cli.json!.newEvents), ...direct.map((d) => (d.kind === 'polled' ? d.newEvents : 0))];
    expect(newEvents.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(1);
    await runCount(tenant.documentId, 1, 15_000);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await runsOf(tenant.documentId)).toHaveLength(1);
    expect(await eventsOf(tenant.connectionId)).toHaveLength(1);
  }, CLI_TIMEOUT_MS);

  it('`connector poll --binding` polls at once instead of at the next tick and prints { newEvents }', async () => {
    const tenant = await polling(3_600);
    await dovecot.appendMessages(tenant.mailUser, [mail('Now 1'), mail('Now 2')]);
    const polled = await runCli(['connector', 'poll', '--binding', tenant.bindingId], stack.env);
    expect(polled.code, polled.stderr).toBe(0);
    expect(polled.json).toEqual({ newEvents: 2 });
    await runCount(tenant.documentId, 2, 15_000);

    const unknown = await runCli(['connector', 'poll', '--binding', '00000000-0000-4000-8000-000000000000'], stack.env);
    expect(unknown.code).not.toBe(0);
    expect(unknown.error).toMatchObject({ error: 'binding_not_found' });
  }, CLI_TIMEOUT_MS);

  it('a mailbox recreated with a new UIDVALIDITY re-baselines: its old mail never runs again, new mail does', async () => {
    const tenant = await polling(1);
    await dovecot.appendMessage(tenant.mailUser, mail('Before the move'));
    await runCount(tenant.documentId, 1, 15_000);
    const before = (await cursorOf(tenant.bindingId))!;

    // The same mail is back in a new mailbox generation (a restore), before the next poll looks.
    await dovecot.recreateMailbox(tenant.mailUser);
    await dovecot.appendMessages(tenant.mailUser, [mail('Before the move'), mail('Restored too')]);
    const after = await until(async () => {
      const cursor = await cursorOf(tenant.bindingId);
      return cursor && String(cursor.uidvalidity) !== String(before.uidvalidity) ? cursor : null;
    }, 30_000, 'the re-baseline');
    expect(Number(after.last_uid)).toBeGreaterThanOrEqual(2);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await runsOf(tenant.documentId)).toHaveLength(1);

    await dovecot.appendMessage(tenant.mailUser, mail('After the move'));
    const runs = await runCount(tenant.documentId, 2, 15_000);
    expect(runs.map((r) => (r.inputs as { subject: string }).subject)).toEqual(['Before the move', 'After the move']);
  }, 90_000);

  it('the IMAP server restarting under the polls does not stop them: mail after it runs, once, and the connection stays active', async () => {
    const tenant = await polling(1);
    for (let i = 0; i < 3; i += 1) {
      await dovecot.restart();
      await new Promise((resolve) => setTimeout(resolve, 700));
    }
    await dovecot.appendMessage(tenant.mailUser, mail('After the restarts'));
    const [run] = await runCount(tenant.documentId, 1, 30_000);
    expect((run!.inputs as { subject: string }).subject).toBe('After the restarts');
    const connection = await stack.db.selectFrom('connector_connections').select('status').where('id', '=', tenant.connectionId).executeTakeFirstOrThrow();
    expect(connection.status).toBe('active');
    expect((await handleOf(tenant.bindingId).describe()).status.name).toBe('RUNNING');
  }, 90_000);

  it('an open circuit breaker pauses polling (no mail is read); closing it resumes', async () => {
    const tenant = await polling(1);
    await setConnector(stack.db, { service: 'imap_mail', status: 'approved', circuitBroken: true });
    try {
      await dovecot.appendMessage(tenant.mailUser, mail('Held by the breaker'));
      await new Promise((resolve) => setTimeout(resolve, 3_500));
      expect(await eventsOf(tenant.connectionId)).toEqual([]);
      expect(await runsOf(tenant.documentId)).toEqual([]);
    } finally {
      await setConnector(stack.db, { service: 'imap_mail', status: 'approved', circuitBroken: false });
    }
    await runCount(tenant.documentId, 1, 15_000);
  }, 60_000);

  it('revoking the connection ends the binding\'s polling workflow', async () => {
    const tenant = await polling(1);
    const revoked = await stack.app.inject({ method: 'DELETE', url: `/api/connectors/connections/${tenant.connectionId}`, headers: { authorization: `Bearer ${tenant.jwt}` } });
    expect(revoked.statusCode).toBe(200);
    expect(await handleOf(tenant.bindingId).result()).toEqual({ stopped: 'connection_revoked' });
    await dovecot.appendMessage(tenant.mailUser, mail('Too late'));
    const stopped = await runCli(['connector', 'poll', '--binding', tenant.bindingId], stack.env);
    expect(stopped.error).toMatchObject({ error: 'polling_not_running' });
    expect(await runsOf(tenant.documentId)).toEqual([]);
  }, CLI_TIMEOUT_MS);
});
