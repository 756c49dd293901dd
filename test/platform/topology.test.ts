import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Connection, WorkflowClient } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Database } from '../../shared/db/client.js';
import { topologyLayout } from '../../scripts/chaos/layout.js';
import { prepareChaosApp, type ChaosApp } from '../../scripts/chaos/setup.js';
import { readFrames, type Frame } from '../../scripts/chaos/sse.js';
import { startStack, type ChaosStack } from '../../scripts/chaos/stack.js';
import type { TopologyRuntime } from '../../scripts/topology/start.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import { startFakeLlm, type FakeLlm } from '../app-runs/llm-server.js';

// `npm run topology` as people run it (issue 43): the Temporal server built from its Go module (the
// cached build) on PostgreSQL, two APIs, two workers, nginx in front, each a real process we can
// SIGKILL. A run through each API and the origin; a worker killed while it runs a block, the run
// finished by the other; a stream started on one API and resumed through the other.

const TOKENS = Array.from({ length: 30 }, (_, i) => `t${i} `);

describe('the production layout (npm run topology)', () => {
  let dataDir = '';
  let llm: FakeLlm;
  let stack: ChaosStack;
  let runtime: TopologyRuntime;
  let db: Database;
  let app: ChaosApp;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'wfapp-topology-'));
    await chmod(dataDir, 0o755); // PostgreSQL runs as `postgres` under root and must enter it
    llm = await startFakeLlm({ tokens: TOKENS, delayMs: 100 });
    stack = await startStack({ layout: topologyLayout, dataDir, llmBaseUrl: llm.url, log: () => {} });
    runtime = JSON.parse(await readFile(path.join(dataDir, 'runtime.json'), 'utf8')) as TopologyRuntime;
    db = createDb(runtime.databaseUrl, { poolSize: 2, applicationName: 'wfapp-topology-test', onConnectionError: () => {} });
    app = await prepareChaosApp(db, runtime.demo.teamId);
  }, 600_000);

  afterAll(async () => {
    await db?.destroy();
    const stopped = await stack?.stop();
    await llm?.close();
    if (stopped?.clean) await rm(dataDir, { recursive: true, force: true });
  }, 120_000);

  const runRequest = (base: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    fetch(`${base}/api/released-app/${app.deploymentId}/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${runtime.demo.apiKey}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });

  /** The run's status and its charges in the credit ledger (one debit of the run's base price). */
  const runRow = async (runId: string) => {
    const { status } = await db.selectFrom('runs').select('status').where('id', '=', runId).executeTakeFirstOrThrow();
    const charges = await db.selectFrom('credit_transactions').select('amount_milli').where('reason', '=', 'run').where('reference', '=', `run:${runId}`).execute();
    return { status, charges: charges.map((row) => Number(row.amount_milli)) };
  };

  it('answers runs through the origin (nginx) and through each API process', async () => {
    expect(runtime.apiUrls).toHaveLength(2);
    for (const base of [runtime.apiUrl, ...runtime.apiUrls]) {
      const res = await runRequest(base, { inputs: { tag: base }, stream: false });
      const body = await res.json() as { status: string; sessions: Array<{ output: unknown }> };
      expect(res.status, JSON.stringify(body)).toBe(200);
      expect(body.status).toBe('completed');
      expect(body.sessions.at(-1)!.output).toBe(TOKENS.join(''));
    }
    // nginx passes the caller's address on; the API believes it (TRUST_PROXY loopback).
    const health = await fetch(`${runtime.apiUrl}/readyz`, { headers: { 'x-forwarded-for': '203.0.113.9' } });
    expect(health.status).toBe(200);
  }, 120_000);

  it('finishes a run on the other worker when the worker running its block is SIGKILLed', async () => {
    const res = await runRequest(runtime.apiUrl, { inputs: { tag: 'worker-kill' }, stream: true, format: 'sse' });
    expect(res.status).toBe(200);
    const runId = res.headers.get('x-run-id')!;
    const frames: Frame[] = [];
    const reading = readFrames(res.body!, (frame) => frames.push(frame), 120_000);

    // Which worker holds the llm block: the pending activity's worker identity is `<pid>@<host>`.
    const connection = await Connection.connect({ address: runtime.temporalAddress });
    let victim: number | undefined;
    try {
      const handle = new WorkflowClient({ connection }).getHandle(workflowIds.appRun(runId));
      for (let i = 0; i < 100 && !victim; i++) {
        const { raw } = await handle.describe();
        const identity = raw.pendingActivities?.find((activity) => activity.lastWorkerIdentity)?.lastWorkerIdentity;
        if (identity) victim = Number(identity.split('@')[0]);
        else await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      await connection.close();
    }
    const workers = [stack.info.children['worker-1'], stack.info.children['worker-2']];
    expect(workers).toContain(victim);
    process.kill(victim!, 'SIGKILL');

    const end = await reading;
    expect(end.end).toBe('terminal');
    expect(frames.at(-1)!.type).toBe('run_complete');
    expect(await runRow(runId)).toEqual({ status: 'completed', charges: [-app.runBaseMilli] });
    // The block ran again from its start on the other worker: the model was asked twice for this run.
    expect(llm.requests.filter((request) => JSON.stringify(request.body).includes('worker-kill')).length).toBeGreaterThanOrEqual(2);
  }, 180_000);

  it('resumes a stream started on one API through the other after the first is SIGKILLed, no event missing or repeated', async () => {
    const [first, second] = runtime.apiUrls as [string, string];
    const res = await runRequest(first, { inputs: { tag: 'api-kill' }, stream: true, format: 'sse' });
    expect(res.status).toBe(200);
    const runId = res.headers.get('x-run-id')!;
    const frames: Frame[] = [];
    const apiPid = (await stack.runtime()).children['api-1']!;
    let killed = false;
    const firstRead = await readFrames(res.body!, (frame) => {
      frames.push(frame);
      if (frames.length === 3 && !killed) { killed = true; process.kill(apiPid, 'SIGKILL'); }
    }, 30_000);
    expect(killed).toBe(true);
    expect(firstRead.end).not.toBe('terminal');

    const resumed = await fetch(`${second}/api/runs/${runId}/events?format=sse`, {
      headers: { authorization: `Bearer ${runtime.demo.apiKey}`, 'last-event-id': String(frames.at(-1)!.id) },
    });
    expect(resumed.status).toBe(200);
    expect((await readFrames(resumed.body!, (frame) => frames.push(frame), 60_000)).end).toBe('terminal');

    // Every event the run stored, once each, in order: the same list a fresh read from the start gives.
    const all: Frame[] = [];
    const replay = await fetch(`${second}/api/runs/${runId}/events?format=sse`, { headers: { authorization: `Bearer ${runtime.demo.apiKey}` } });
    await readFrames(replay.body!, (frame) => all.push(frame), 30_000);
    expect(frames.map((frame) => frame.id)).toEqual(all.map((frame) => frame.id));
    expect(new Set(frames.map((frame) => frame.id)).size).toBe(frames.length);
    expect(frames.at(-1)!.type).toBe('run_complete');
    expect(await runRow(runId)).toEqual({ status: 'completed', charges: [-app.runBaseMilli] });
  }, 180_000);
});
