import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grantCredits } from '../../shared/billing/service.js';
import { createApiKey } from '../../shared/credentials/api-keys.js';
import { createDb, type Database } from '../../shared/db/client.js';
import type { Graph } from '../../shared/documents/graph.js';
import { createTeam, createUser } from '../../shared/identity/service.js';
import { findFreePort } from '../../shared/ports.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { publishDirect } from '../harness/apps.js';
import { until } from '../harness/until.js';
import { isRunning, npmStartEnv, processesMentioning, processGroupMembers, readRuntime, spawnNpmStart, type NpmStart } from './npm-start-group.js';

// Issue 44, "Bad input and faults": kill -9 of the whole `npm start` group while 500 runs wait
// (timers and approvals mixed), start it again: every run resumes, every timer fires, every
// approval can still be decided, each run completes exactly once and is charged once; callbacks
// are delivered exactly once per event id to a receiver that answers 500 for the first minute.
// (test/long-runs/worker-kill.test.ts is the small version: only the worker process dies.)

const RUNS_PER_KIND = 250;
/** Long enough for every run to be waiting before the kill, short enough to fall due while the stack is down. */
const WAIT_SECONDS = 20;
const REFUSE_MS = 60_000;

const timerGraph: Graph = {
  blocks: [{ id: 'pause', type: 'wait', name: 'pause', config: { seconds: WAIT_SECONDS } }, { id: 'o', type: 'output', name: 'o', config: { value: 'timer' } }],
  edges: [{ from: 'pause', to: 'o' }],
};
const approvalGraph: Graph = {
  blocks: [{ id: 'ok', type: 'approval', name: 'ok', config: { prompt: 'go?' } }, { id: 'o', type: 'output', name: 'o', config: { value: 'approved {{ok.approved}}' } }],
  edges: [{ from: 'ok', to: 'o' }],
};

/** `fn` over `items`, `width` at a time. */
async function inParallel<T, R>(items: T[], width: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) { const i = next++; results[i] = await fn(items[i]!); }
  }));
  return results;
}

/** The callback receiver: 500 to everything until REFUSE_MS after the kill, then 204; 2xx answers counted by webhook-id. */
function callbackReceiver() {
  const state = { killedAt: null as number | null, firstPostAt: null as number | null, beforeKill: 0, refused: 0, delivered: new Map<string, number>() };
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      state.firstPostAt ??= Date.now();
      if (state.killedAt === null) state.beforeKill += 1;
      if (state.killedAt === null || Date.now() < state.killedAt + REFUSE_MS) { state.refused += 1; res.writeHead(500).end(); return; }
      const id = String(req.headers['webhook-id']);
      state.delivered.set(id, (state.delivered.get(id) ?? 0) + 1);
      res.writeHead(204).end();
    });
  });
  return { server, state };
}

describe.runIf(process.platform === 'linux')('durability: runs that wait survive a kill -9 of the whole npm start', () => {
  let dataDir = '';
  let stack: NpmStart | undefined;
  let db: Database | undefined;
  const receiver = callbackReceiver();
  let receiverUrl = '';

  beforeAll(async () => {
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.server.address() as AddressInfo).port}/hook`;
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'wfapp-group-kill-'));
    await chmod(dataDir, 0o755); // PostgreSQL (run as `postgres` under root) must enter it
  });
  afterAll(async () => {
    await db?.destroy();
    if (stack && stack.child.exitCode === null && stack.child.signalCode === null) {
      process.kill(-stack.child.pid!, 'SIGINT');
      await stack.exited;
    }
    receiver.server.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('after SIGKILL of the group and a new start, every timer fires, every approval is decided, each run completes and is charged once, each callback arrives once', async () => {
    const began = Date.now();
    /** Progress with the seconds since the test began: the figures of docs/long-runs.md "Surviving a restart". */
    const mark = (what: string) => process.stdout.write(`[group-kill] ${((Date.now() - began) / 1000).toFixed(1)} s ${what}\n`);
    const env = npmStartEnv(dataDir, await findFreePort());
    stack = spawnNpmStart(env);
    const { apiUrl } = await stack.ready;
    mark('npm start ready');
    const runtime = await readRuntime(dataDir);
    db = createDb(runtime.databaseUrl, { poolSize: 4 });

    // A funded team of our own, an API key, the receiver allowed past the SSRF guard (its NOTIFY reaches the running stack).
    const owner = await createUser(db, { email: `group-kill-${Date.now()}@example.com`, name: 'owner' });
    const team = await createTeam(db, { ownerId: owner.id, name: 'Group kill' });
    await grantCredits(db, { teamId: team.id, amountMilli: 10_000_000 });
    const apiKey = (await createApiKey(db, { teamId: team.id, createdBy: owner.id, name: 'group kill' })).token;
    await upsertSiteSetting(db, 'http_block.allow_hosts', [new URL(receiverUrl).host]);
    const timers = (await publishDirect(db, timerGraph, { teamId: team.id })).deploymentId;
    const approvals = (await publishDirect(db, approvalGraph, { teamId: team.id })).deploymentId;
    const api = (url: string, body: unknown) => fetch(`${apiUrl}${url}`, {
      method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
    });
    const start = async (deploymentId: string) => {
      const res = await api(`/api/released-app/${deploymentId}/run`, { inputs: {}, mode: 'background', callback: { url: receiverUrl } });
      expect(res.status, await res.clone().text()).toBe(202);
      return ((await res.json()) as { runId: string }).runId;
    };

    // Approvals first: the timers, started last, are the ones that must still be waiting at the kill.
    const approvalRuns = await inParallel(Array.from({ length: RUNS_PER_KIND }, () => approvals), 20, start);
    const timerRuns = await inParallel(Array.from({ length: RUNS_PER_KIND }, () => timers), 20, start);
    const all = [...timerRuns, ...approvalRuns];
    mark(`${all.length} runs started`);
    const countByStatus = async (database: Database, status: 'waiting' | 'completed') => (await database.selectFrom('runs').select('id')
      .where('id', 'in', all).where('status', '=', status).execute()).length;
    await until(async () => (await countByStatus(db!, 'waiting')) === all.length, 60_000, 'all 500 runs to wait', 500);
    const timersDue = await db.selectFrom('run_events').select('payload').where('run_id', 'in', timerRuns).where('type', '=', 'block_waiting').execute();
    expect(timersDue).toHaveLength(RUNS_PER_KIND);
    mark('all waiting');
    const lastDue = Math.max(...timersDue.map((e) => Date.parse((e.payload as { until: string }).until)));

    // kill -9 of the group. The Temporal dev server runs in a process group of its own (so a Ctrl-C
    // stops it after the workers drained: temporal/dev-server.ts); the group kill would reach it only
    // as its parent-death SIGTERM, a graceful stop. The issue wants the whole stack dead at once: it
    // gets SIGKILL too, at the same moment.
    const group = processGroupMembers(stack.child.pid!);
    const pids = [...group, runtime.pid, runtime.children.postgres, runtime.children.temporal].filter((pid): pid is number => pid !== null);
    await db.destroy();
    db = undefined;
    receiver.state.killedAt = Date.now();
    process.kill(-stack.child.pid!, 'SIGKILL');
    if (runtime.children.temporal !== null) process.kill(runtime.children.temporal, 'SIGKILL');
    await stack.exited;
    await until(async () => pids.every((pid) => !isRunning(pid)) && processesMentioning(dataDir).length === 0, 10_000, 'nothing of npm start left running');
    expect(group.length).toBeGreaterThanOrEqual(3); // npm, node (scripts/dev.ts), PostgreSQL and its backends
    mark(`killed (${group.length} processes in the group, and Temporal); nothing left`);

    // Start again once every timer fell due while nothing ran.
    await new Promise((r) => setTimeout(r, Math.max(0, lastDue + 1_000 - Date.now())));
    const restartAt = Date.now();
    stack = spawnNpmStart(env);
    const second = await stack.ready;
    mark(`npm start ready again (${second.seconds.toFixed(1)} s)`);
    db = createDb((await readRuntime(dataDir)).databaseUrl, { poolSize: 4 });

    // Every approval can still be decided.
    const second200 = (runId: string) => fetch(`${second.apiUrl}/api/runs/${runId}/approvals/ok`, {
      method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ approved: true }),
    }).then((res) => res.status);
    expect(new Set(await inParallel(approvalRuns, 20, second200))).toEqual(new Set([200]));
    mark('all approved');
    await until(async () => (await countByStatus(db!, 'completed')) === all.length, 120_000, 'all 500 runs to complete', 500);
    mark(`all completed; the first callback came ${((receiver.state.firstPostAt ?? NaN) - receiver.state.killedAt!) / 1000} s after the kill`);
    const completedAfterMs = Date.now() - restartAt;

    // Every timer fired, after the restart (it fell due while nothing ran); every approval was decided.
    const outputsOf = async (runIds: string[], eventKey: string) => (await db!.selectFrom('run_events').select(['payload', 'created_at'])
      .where('run_id', 'in', runIds).where('event_key', '=', eventKey).execute())
      .map((e) => ({ output: (e.payload as { output: Record<string, unknown> }).output, at: e.created_at.getTime() }));
    const fired = await outputsOf(timerRuns, 'pause:block_complete');
    expect(fired).toHaveLength(RUNS_PER_KIND);
    expect(fired.filter((e) => e.at < restartAt || Number(e.output.waitedSeconds) < WAIT_SECONDS)).toEqual([]);
    const decided = await outputsOf(approvalRuns, 'ok:block_complete');
    expect(decided).toHaveLength(RUNS_PER_KIND);
    expect(decided.filter((e) => e.output.approved !== true || e.output.timedOut !== false)).toEqual([]);

    // Completed exactly once, charged exactly once.
    const terminals = await db.selectFrom('run_events').select(['id', 'run_id', 'type']).where('run_id', 'in', all)
      .where('type', 'in', ['run_complete', 'run_error']).execute();
    expect(terminals.filter((e) => e.type === 'run_complete').map((e) => e.run_id).sort()).toEqual([...all].sort());
    expect(terminals).toHaveLength(all.length);
    const charges = await db.selectFrom('credit_transactions').select(['reason', 'reference']).where('team_id', '=', team.id)
      .where('reason', 'in', ['run', 'run_refund']).execute();
    expect(charges.map((c) => `${c.reason} ${c.reference}`).sort()).toEqual(all.map((id) => `run run:${id}`).sort());

    // Each terminal event reaches the receiver once it answers 2xx, and exactly once per webhook-id.
    const ids = terminals.map((e) => String(e.id));
    await until(async () => ids.every((id) => receiver.state.delivered.has(id)), 180_000, 'every terminal event delivered', 500);
    const deliveredAfterMs = Date.now() - restartAt;
    mark(`all callbacks delivered (${receiver.state.refused} refused)`);
    for (const id of ids) expect(receiver.state.delivered.get(id), `webhook-id ${id}`).toBe(1);
    expect([...receiver.state.delivered.keys()].sort()).toEqual([...ids].sort());
    expect(receiver.state.beforeKill).toBe(0); // no run ended before the kill
    // The restart was quick enough for callbacks to meet the receiver's minute of 500s, and they did.
    expect(receiver.state.firstPostAt! - receiver.state.killedAt!, 'the first callback came after the minute of 500s').toBeLessThan(REFUSE_MS);
    expect(receiver.state.refused).toBeGreaterThan(0);
    // The delivery log follows the receiver's 2xx (the activity writes it once the POST returned).
    const deliveries = () => db!.selectFrom('run_callback_deliveries').select(['event_id', 'status']).where('run_id', 'in', all).execute();
    await until(async () => (await deliveries()).filter((d) => d.status === 'delivered').length === all.length, 30_000, 'every delivery logged', 500);
    const log = await deliveries();
    expect(log.map((d) => String(d.event_id)).sort()).toEqual([...ids].sort());
    expect(log.every((d) => d.status === 'delivered')).toBe(true);

    process.stdout.write(`[group-kill] restart ready in ${second.seconds.toFixed(1)} s; all ${all.length} runs completed ${(completedAfterMs / 1000).toFixed(1)} s `
      + `after the restart began; ${ids.length} callbacks delivered ${(deliveredAfterMs / 1000).toFixed(1)} s after it `
      + `(${receiver.state.refused} attempts refused in the first minute)\n`);
  }, 300_000);
});
