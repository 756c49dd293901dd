import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grantCredits } from '../../shared/billing/service.js';
import { setConnector } from '../../shared/connectors/catalog.js';
import { issueDispatchToken } from '../../shared/connectors/dispatch.js';
import { pollBinding } from '../../shared/connectors/polling.js';
import { credentialFactory } from '../harness/credentials.js';
import { startDovecot, type Dovecot } from '../harness/dovecot.js';
import { withSetting } from '../harness/settings.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { allowDovecot, mail, mailTenant, type MailTenant } from './fixtures.js';

// `POST /api/connector-triggers/dispatch` (spec §4.12 "Dispatch", its status table): driven here
// by hand with tokens the dispatcher's own code issues, with no polling workflow running, so each
// row is seen alone. polling.test.ts drives the whole loop.

describe('connector dispatch (spec §4.12 dispatch table, §8.2 60-second token)', () => {
  let stack: TestStack;
  let dovecot: Dovecot;

  const dispatch = (token: string | null, payload?: object) => stack.app.inject({
    method: 'POST', url: '/api/connector-triggers/dispatch', ...(payload ? { payload } : {}),
    headers: token === null ? {} : { authorization: `Bearer ${token}` },
  });
  const runsOf = (documentId: string) => stack.db.selectFrom('runs').selectAll().where('document_id', '=', documentId).orderBy('created_at').execute();
  const dispatchRow = (id: string) => stack.db.selectFrom('connector_dispatches').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const balanceOf = async (teamId: string) =>
    Number((await stack.db.selectFrom('credit_balances').select('balance_milli').where('team_id', '=', teamId).executeTakeFirstOrThrow()).balance_milli);

  /** A tenant with a published app, a binding (its workflow not started) and `count` new mails recorded as pending dispatches. */
  async function pendingMail(count = 1, credits?: number): Promise<{ tenant: MailTenant; bindingId: string; dispatchIds: string[] }> {
    const tenant = await mailTenant(stack, dovecot, credits);
    await tenant.publish();
    const bindingId = await tenant.bind({ start: false });
    const deps = { db: stack.db, secrets: stack.deps.secrets, settings: stack.deps.settings };
    expect(await pollBinding(deps, bindingId)).toMatchObject({ kind: 'polled', newEvents: 0 }); // the baseline
    await dovecot.appendMessages(tenant.mailUser, Array.from({ length: count }, (_, i) => mail(`Order ${i + 1}`)));
    const polled = await pollBinding(deps, bindingId);
    expect(polled).toMatchObject({ kind: 'polled', newEvents: count });
    return { tenant, bindingId, dispatchIds: polled.kind === 'polled' ? polled.pending : [] };
  }
  const tokenFor = async (dispatchId: string) => (await issueDispatchToken(stack.db, dispatchId))!;

  beforeAll(async () => {
    [stack, dovecot] = await Promise.all([createTestStack(), startDovecot()]);
    await allowDovecot(stack, dovecot);
  });
  afterAll(async () => {
    await Promise.all([stack?.close(), dovecot?.stop()]);
  });

  it('200 answers only { runId }; the run has the ledger\'s mail as inputs and the contract\'s _trigger, whatever body the caller sends', async () => {
    const { tenant, dispatchIds: [dispatchId] } = await pendingMail();
    const response = await dispatch(await tokenFor(dispatchId!), { subject: 'forged', text: 'not from the ledger' });
    expect(response.statusCode, response.body).toBe(200);
    const { runId } = response.json();
    expect(response.json()).toEqual({ runId: expect.stringMatching(/^[0-9a-f-]{36}$/) });

    const [run] = await runsOf(tenant.documentId);
    expect(run).toMatchObject({ id: runId, trigger_source: 'connector', team_id: tenant.teamId, user_id: tenant.ownerId });
    expect(run!.inputs).toEqual({
      subject: 'Order 1', from: '"Ann Sender" <ann@example.com>', to: 'inbox@example.com', date: '2026-11-23T10:00:00.000Z',
      text: 'Body of Order 1\n', messageId: expect.stringMatching(/^<.+@example\.com>$/),
      _trigger: { source: 'connector', service: 'imap_mail', trigger: 'poll_new_email', connection_id: tenant.connectionId, triggered_at: expect.any(String) },
    });
    expect(await dispatchRow(dispatchId!)).toMatchObject({ status: 'dispatched', run_id: runId });
  });

  it('a replayed token never runs a second (billed) execution, not even two requests racing with it', async () => {
    const { tenant, dispatchIds: [first, second] } = await pendingMail(2);
    const token = await tokenFor(first!);
    expect((await dispatch(token)).statusCode).toBe(200);
    const balance = await balanceOf(tenant.teamId);
    const replayed = await dispatch(token);
    expect([replayed.statusCode, replayed.json()]).toEqual([404, { error: 'not_found' }]);

    const raced = await tokenFor(second!);
    const answers = await Promise.all([dispatch(raced), dispatch(raced), dispatch(raced)]);
    expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 404, 404]);
    expect(await runsOf(tenant.documentId)).toHaveLength(2);
    expect(await balanceOf(tenant.teamId)).toBe(balance - 10);
  });

  it('a forged, malformed, missing, expired or superseded token, and a revoked connection, all get the same 404 and nothing runs', async () => {
    const { tenant, dispatchIds: [dispatchId] } = await pendingMail();
    const superseded = await tokenFor(dispatchId!);
    const current = await tokenFor(dispatchId!);
    const answers = await Promise.all([
      dispatch(`cdt_${randomBytes(32).toString('base64url')}`),
      dispatch('cdt_short'),
      dispatch(null),
      dispatch(superseded),
    ]);
    // Expired: the lease's 60 seconds are over.
    await stack.db.updateTable('connector_dispatches').set({ lease_expires_at: sql<Date>`now() - interval '1 second'` }).where('id', '=', dispatchId!).execute();
    answers.push(await dispatch(current));
    for (const answer of answers) expect([answer.statusCode, answer.json()]).toEqual([404, { error: 'not_found' }]);

    const fresh = await tokenFor(dispatchId!);
    const revoked = await stack.app.inject({ method: 'DELETE', url: `/api/connectors/connections/${tenant.connectionId}`, headers: { authorization: `Bearer ${tenant.jwt}` } });
    expect(revoked.statusCode).toBe(200);
    const afterRevoke = await dispatch(fresh);
    expect([afterRevoke.statusCode, afterRevoke.json()]).toEqual([404, { error: 'not_found' }]);
    expect(await runsOf(tenant.documentId)).toEqual([]);
    expect(await dispatchRow(dispatchId!)).toMatchObject({ status: 'pending', run_id: null });
  });

  it('409 when the binding changed after issue (a republish) or a check failed transiently (the breaker); safe to retry with a new token', async () => {
    const { tenant, dispatchIds: [dispatchId] } = await pendingMail();
    const beforeRepublish = await tokenFor(dispatchId!);
    const newDeployment = await tenant.publish();
    const changed = await dispatch(beforeRepublish);
    expect([changed.statusCode, changed.json().error]).toEqual([409, 'not_executed']);

    await setConnector(stack.db, { service: 'imap_mail', status: 'approved', circuitBroken: true });
    try {
      const broken = await dispatch(await tokenFor(dispatchId!));
      expect([broken.statusCode, broken.json().error]).toEqual([409, 'not_executed']);
    } finally {
      await setConnector(stack.db, { service: 'imap_mail', status: 'approved', circuitBroken: false });
    }
    expect(await runsOf(tenant.documentId)).toEqual([]);

    const retried = await dispatch(await tokenFor(dispatchId!));
    expect(retried.statusCode).toBe(200);
    expect((await runsOf(tenant.documentId)).map((r) => r.deployment_id)).toEqual([newDeployment]);
  });

  it('402 while the team\'s credits are short: nothing charged or run, the mail stays pending; it runs once credits arrive', async () => {
    const { tenant, dispatchIds: [dispatchId] } = await pendingMail(1, 5);
    const short = await dispatch(await tokenFor(dispatchId!));
    expect([short.statusCode, short.json().error]).toEqual([402, 'insufficient_credits']);
    expect(await runsOf(tenant.documentId)).toEqual([]);
    expect(await balanceOf(tenant.teamId)).toBe(5);
    expect(await dispatchRow(dispatchId!)).toMatchObject({ status: 'pending' });

    await grantCredits(stack.db, { teamId: tenant.teamId, amountMilli: 1_000 });
    expect((await dispatch(await tokenFor(dispatchId!))).statusCode).toBe(200);
    expect(await runsOf(tenant.documentId)).toHaveLength(1);
  });

  it('429 with Retry-After above CONNECTOR_DISPATCH_RATE_LIMIT_PER_MINUTE, before anything runs', async () => {
    const { tenant, dispatchIds: [first, second] } = await pendingMail(2);
    await withSetting(stack, 'CONNECTOR_DISPATCH_RATE_LIMIT_PER_MINUTE', 1, async () => {
      expect((await dispatch(await tokenFor(first!))).statusCode).toBe(200);
      const limited = await dispatch(await tokenFor(second!));
      expect([limited.statusCode, limited.json().error]).toEqual([429, 'rate_limited']);
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    });
    expect(await runsOf(tenant.documentId)).toHaveLength(1);
    expect(await dispatchRow(second!)).toMatchObject({ status: 'pending', run_id: null });
  });

  it('an OAuth token, an API key or a user session are not dispatch tokens', async () => {
    const { tenant } = await pendingMail();
    const users = credentialFactory(stack);
    const [apiKey, oauth] = await Promise.all([users.apiKey(tenant.teamId, tenant.ownerId), users.oauthToken(tenant.ownerId, ['chat:completions'])]);
    const answers = await Promise.all([dispatch(tenant.jwt), dispatch(apiKey.token), dispatch(oauth.token)]);
    for (const answer of answers) expect([answer.statusCode, answer.json()]).toEqual([404, { error: 'not_found' }]);
    expect(await runsOf(tenant.documentId)).toEqual([]);
  });
});
