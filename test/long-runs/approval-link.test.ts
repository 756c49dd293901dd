import { existsSync } from 'node:fs';
import { sql } from 'kysely';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Graph } from '../../shared/documents/graph.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { until } from '../harness/until.js';

const CHROMIUM = '/usr/bin/chromium';

// The approval link (CONTRACTS.md "Long runs"): a single-use token for a person without an
// account; its plain HTML page in a real Chromium (a form, no JavaScript needed), its JSON form,
// and what a used, expired or unknown link answers.

const graph = (approval: Record<string, unknown>): Graph => ({
  blocks: [
    { id: 'q', type: 'input', name: 'q', config: { valueType: 'string', required: true } },
    { id: 'ok', type: 'approval', name: 'ok', config: approval },
    { id: 'o', type: 'output', name: 'o', config: { value: '={ "approved": $ok.approved, "data": $ok.data }' } },
  ],
  edges: [{ from: 'q', to: 'ok' }, { from: 'ok', to: 'o' }],
});

const fields = {
  type: 'object',
  properties: {
    note: { type: 'string', title: 'Note to the customer' },
    amount: { type: 'number', maximum: 100 },
    urgent: { type: 'boolean' },
  },
  required: ['note'],
};

describe('the approval link', () => {
  let stack: TestStack;
  let browser: Browser;
  let base: string;
  let apiKey: string;
  let teamId: string;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`Chromium is required at ${CHROMIUM} (sudo apt-get install -y chromium)`);
    stack = await createTestStack();
    await stack.startWorker();
    base = await stack.app.listen({ port: 0, host: '127.0.0.1' });
    const tenant = await credentialFactory(stack).fundedTenant(1_000_000);
    apiKey = tenant.apiKey;
    teamId = tenant.team.id;
    browser = await chromium.launch({
      executablePath: CHROMIUM, headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  /** Starts a run that waits for approval; the link's path from its block_waiting event. */
  const startWaiting = async (approval: Record<string, unknown> = { prompt: 'Refund {{q}}?', fields }) => {
    const { deploymentId } = await publishDirect(stack.db, graph(approval), { teamId });
    const res = await stack.app.inject({
      method: 'POST', url: `/api/released-app/${deploymentId}/run`, headers: { authorization: `Bearer ${apiKey}` }, payload: { inputs: { q: 'order 7 <b>' }, stream: false },
    });
    expect(res.statusCode).toBe(202);
    const runId = res.json().runId as string;
    const waiting = await stack.db.selectFrom('run_events').select('payload').where('run_id', '=', runId).where('type', '=', 'block_waiting').executeTakeFirstOrThrow();
    const url = new URL((waiting.payload as { approvalUrl: string }).approvalUrl);
    return { runId, path: url.pathname };
  };
  const approvalRow = (runId: string) => stack.db.selectFrom('run_approvals').selectAll().where('run_id', '=', runId).executeTakeFirstOrThrow();
  const output = async (runId: string) => {
    await until(async () => ['completed', 'failed'].includes((await stack.db.selectFrom('runs').select('status').where('id', '=', runId).executeTakeFirstOrThrow()).status), 15_000, 'the run to end');
    const done = await stack.db.selectFrom('run_events').select('payload').where('run_id', '=', runId).where('type', '=', 'block_complete')
      .where(sql<string>`payload->>'blockId'`, '=', 'ok').executeTakeFirstOrThrow();
    return (done.payload as { output: Record<string, unknown> }).output;
  };

  it('in Chromium: shows the prompt and the fields, Approve sends the form, the run goes on with the data; the link is then gone', async () => {
    const { runId, path } = await startWaiting();
    const context = await browser.newContext({ javaScriptEnabled: false });
    try {
      const page = await context.newPage();
      page.setDefaultTimeout(5000);
      const shown = await page.goto(`${base}${path}`);
      expect(shown!.status()).toBe(200);
      expect(shown!.headers()['cache-control']).toBe('no-store');
      expect(await page.textContent('#prompt')).toBe('Refund order 7 <b>?');
      expect(await page.textContent('label[for="field-note"]')).toBe('Note to the customer');
      await page.fill('#field-note', 'Sorry for the delay');
      await page.fill('#field-amount', '42.5');
      await page.check('#field-urgent');
      await page.fill('#comment', 'ok by me');
      const [answer] = await Promise.all([page.waitForNavigation(), page.click('#approve')]);
      expect(answer!.status()).toBe(200);
      expect(await page.textContent('#outcome')).toBe('Approved');

      expect(await output(runId)).toEqual({
        approved: true, data: { note: 'Sorry for the delay', amount: 42.5, urgent: true }, decidedBy: 'link', decidedAt: expect.any(String), timedOut: false,
      });
      expect(await approvalRow(runId)).toMatchObject({ status: 'approved', decided_by: 'link', comment: 'ok by me' });

      const again = await page.goto(`${base}${path}`);
      expect(again!.status()).toBe(410);
      expect(await page.textContent('#gone')).toMatch(/no longer valid/);
    } finally {
      await context.close();
    }
  });

  it('in Chromium: Reject needs no fields filled in', async () => {
    const { runId, path } = await startWaiting();
    const context = await browser.newContext({ javaScriptEnabled: false });
    try {
      const page = await context.newPage();
      page.setDefaultTimeout(5000);
      await page.goto(`${base}${path}`);
      await Promise.all([page.waitForNavigation(), page.click('#reject')]);
      expect(await page.textContent('#outcome')).toBe('Rejected');
      expect(await output(runId)).toMatchObject({ approved: false, data: null, decidedBy: 'link', timedOut: false });
    } finally {
      await context.close();
    }
  });

  it('a form whose data does not match the fields shows the page again with the error (400); nothing is decided', async () => {
    const { runId, path } = await startWaiting();
    const res = await stack.app.inject({
      method: 'POST', url: path, headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ decision: 'approve', 'field.note': 'hi', 'field.amount': '500' }).toString(),
    });
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toMatch(/text\/html/);
    expect(res.body).toMatch(/id="error"[^>]*>[^<]*amount/);
    expect(await approvalRow(runId)).toMatchObject({ status: 'pending', decided_by: null });
    // The link still works.
    expect((await stack.app.inject({ method: 'GET', url: path })).statusCode).toBe(200);
  });

  it('JSON: decides once (200), then 410 { error: "gone" }; JSON data not matching fields is 400 invalid_body', async () => {
    const { runId, path } = await startWaiting();
    const bad = await stack.app.inject({ method: 'POST', url: path, payload: { approved: true, data: { amount: 1 } } });
    expect([bad.statusCode, bad.json().error]).toEqual([400, 'invalid_body']);
    expect((await approvalRow(runId)).status).toBe('pending');
    const res = await stack.app.inject({ method: 'POST', url: path, payload: { approved: true, data: { note: 'fine' } } });
    expect([res.statusCode, res.json()]).toEqual([200, { runId, blockId: 'ok', approved: true }]);
    const again = await stack.app.inject({ method: 'POST', url: path, payload: { approved: false } });
    expect([again.statusCode, again.json()]).toEqual([410, { error: 'gone' }]);
    expect(await output(runId)).toMatchObject({ approved: true, data: { note: 'fine' } });
    expect((await approvalRow(runId)).status).toBe('approved');
  });

  it('an expired link answers 410 (page and JSON) and changes nothing', async () => {
    const { runId, path } = await startWaiting({ prompt: 'quick?', timeoutSeconds: 1 });
    expect(await output(runId)).toMatchObject({ approved: false, timedOut: true });
    const page = await stack.app.inject({ method: 'GET', url: path });
    expect(page.statusCode).toBe(410);
    expect(page.body).toContain('id="gone"');
    const post = await stack.app.inject({ method: 'POST', url: path, payload: { approved: true } });
    expect([post.statusCode, post.json()]).toEqual([410, { error: 'gone' }]);
    expect((await approvalRow(runId)).status).toBe('timed_out');
  });

  it('an unknown or malformed token is 410 without a lookup of anything else', async () => {
    for (const token of [`wfa-${'A'.repeat(43)}`, 'wfa-short', 'not-a-token']) {
      expect((await stack.app.inject({ method: 'GET', url: `/approve/${token}` })).statusCode).toBe(410);
      const post = await stack.app.inject({ method: 'POST', url: `/approve/${token}`, payload: { approved: true } });
      expect([post.statusCode, post.json()]).toEqual([410, { error: 'gone' }]);
    }
  });
});
