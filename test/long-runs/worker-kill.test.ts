import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Graph } from '../../shared/documents/graph.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { until } from '../harness/until.js';

// The worker process dies (SIGKILL) while runs wait — timers and approvals mixed — and a new one
// starts after the timers were due: every timer fires, every approval can still be decided, each
// run completes exactly once and is charged once, and callbacks reach a receiver that answers 500
// at first exactly once per event id (CONTRACTS.md "Long runs", the faults).

const RUNS_PER_KIND = 8;

describe('durability: runs that wait survive the worker', () => {
  let stack: TestStack;
  let child: ChildProcess | undefined;
  let receiver: http.Server;
  let receiverUrl: string;
  /** 2xx answers by webhook-id, and every POST. */
  const delivered = new Map<string, number>();
  let refused = 0;
  let refuseUntil = 0;

  beforeAll(async () => {
    receiver = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        // From the kill on: 500 until 8 s after the restart, and in any case to the first 4 POSTs (a
        // loaded machine may take longer than the window to deliver anything).
        if (Date.now() < refuseUntil || (refuseUntil > 0 && refused < 4)) { refused += 1; res.writeHead(500).end(); return; }
        const id = String(req.headers['webhook-id']);
        delivered.set(id, (delivered.get(id) ?? 0) + 1);
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const port = (receiver.address() as AddressInfo).port;
    receiverUrl = `http://127.0.0.1:${port}/hook`;
    stack = await createTestStack();
    await upsertSiteSetting(stack.db, 'http_block.allow_hosts', [`127.0.0.1:${port}`]);
    stack.deps.settings.invalidate();
  });
  afterAll(async () => {
    child?.kill('SIGKILL');
    await stack?.close();
    receiver?.close();
  });

  it('after a SIGKILL of the worker every timer fires, every approval is decided, each run completes and is charged once, each callback arrives once', async () => {
    child = spawn(process.execPath, ['--import', 'tsx', 'worker/main.ts'], {
      env: { ...stack.env, WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath') }, stdio: 'ignore',
    });
    const { team, apiKey } = await credentialFactory(stack).fundedTenant(10_000_000);
    const timerGraph: Graph = {
      blocks: [{ id: 'pause', type: 'wait', name: 'pause', config: { seconds: 4 } }, { id: 'o', type: 'output', name: 'o', config: { value: 'timer' } }],
      edges: [{ from: 'pause', to: 'o' }],
    };
    const approvalGraph: Graph = {
      blocks: [{ id: 'ok', type: 'approval', name: 'ok', config: { prompt: 'go?' } }, { id: 'o', type: 'output', name: 'o', config: { value: 'approved {{ok.approved}}' } }],
      edges: [{ from: 'ok', to: 'o' }],
    };
    const timers = (await publishDirect(stack.db, timerGraph, { teamId: team.id })).deploymentId;
    const approvals = (await publishDirect(stack.db, approvalGraph, { teamId: team.id })).deploymentId;
    const start = async (deploymentId: string) => {
      const res = await stack.app.inject({
        method: 'POST', url: `/api/released-app/${deploymentId}/run`, headers: { authorization: `Bearer ${apiKey}` },
        payload: { inputs: {}, mode: 'background', callback: { url: receiverUrl } },
      });
      expect(res.statusCode).toBe(202);
      return res.json().runId as string;
    };
    const timerRuns = await Promise.all(Array.from({ length: RUNS_PER_KIND }, () => start(timers)));
    const approvalRuns = await Promise.all(Array.from({ length: RUNS_PER_KIND }, () => start(approvals)));
    const all = [...timerRuns, ...approvalRuns];
    const statuses = async () => stack.db.selectFrom('runs').select(['id', 'status']).where('id', 'in', all).execute();
    await until(async () => (await statuses()).every((r) => r.status === 'waiting'), 30_000, 'every run to wait');

    child.kill('SIGKILL');
    await new Promise((resolve) => child!.once('exit', resolve));
    // The timers fall due while no worker runs; the receiver refuses until 8 s after the restart.
    refuseUntil = Number.POSITIVE_INFINITY;
    await new Promise((r) => setTimeout(r, 4_500));
    await stack.startWorker();
    refuseUntil = Date.now() + 8_000;

    for (const runId of approvalRuns) {
      const res = await stack.app.inject({ method: 'POST', url: `/api/runs/${runId}/approvals/ok`, headers: { authorization: `Bearer ${apiKey}` }, payload: { approved: true } });
      expect(res.statusCode).toBe(200);
    }
    await until(async () => (await statuses()).every((r) => r.status === 'completed'), 60_000, 'every run to complete');

    const terminals = await stack.db.selectFrom('run_events').select(['id', 'run_id', 'type']).where('run_id', 'in', all).where('type', 'in', ['run_complete', 'run_error']).execute();
    expect(terminals.filter((e) => e.type === 'run_complete').map((e) => e.run_id).sort()).toEqual([...all].sort());
    const charges = await stack.db.selectFrom('credit_transactions').select('reference').where('team_id', '=', team.id).where('reason', '=', 'run').execute();
    expect(charges.map((c) => c.reference).sort()).toEqual(all.map((id) => `run:${id}`).sort());

    await until(async () => terminals.every((e) => delivered.has(String(e.id))), 60_000, 'every terminal event delivered');
    for (const e of terminals) expect(delivered.get(String(e.id))).toBe(1);
    // The receiver did refuse some: those events came again, and were counted once.
    expect(refused).toBeGreaterThan(0);
    // The log row follows the receiver's 2xx (the activity writes it once the POST returned).
    const deliveries = () => stack.db.selectFrom('run_callback_deliveries').select(['event_id', 'status']).where('run_id', 'in', all).execute();
    await until(async () => ((await deliveries()).filter((d) => d.status === 'delivered').length === all.length ? true : undefined), 30_000, 'every delivery logged');
    const log = await deliveries();
    expect(log).toHaveLength(all.length);
    expect(log.every((d) => d.status === 'delivered')).toBe(true);
  }, 180_000);
});
