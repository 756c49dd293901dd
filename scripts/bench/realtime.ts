import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createClient, type SupabaseClient } from '@supabase/supabase-js';
import { sql } from 'kysely';
import WebSocket from 'ws';
import { buildApp } from '../../api/app.js';
import type { AppDeps } from '../../api/deps.js';
import { insertRunEvents } from '../../shared/app-runs/run-events-repository.js';
import { createApiKey } from '../../shared/credentials/api-keys.js';
import { anonKeysOf } from '../../shared/data-api/identity.js';
import { observeBatches, type BatchTiming } from '../../shared/realtime/changes/dispatcher.js';
import { poolOf, type Database } from '../../shared/db/client.js';
import { exampleGraph } from '../../shared/documents/example-graph.js';
import { publishDirect } from '../../test/harness/apps.js';
import { addTeamMember, createTeam, createUser } from '../../shared/identity/service.js';
import { withOwnStack } from './own-stack.js';

// Issue 37's speed goals (spec 6.4) and spec 4.1's run streams at the same scale. One API process:
// the API (buildApp, as `npm run api` builds it) listens in the bench process, and the clients and
// load generators run in the same process on the same 2 cores, so every delay below includes the
// clients' own CPU time.

// REALTIME_BENCH_ROW_USERS: fewer distinct users for the same 1,000 clients (a diagnosis: the check runs per distinct reader).
// REALTIME_BENCH_TIMING=1: where the row changes' batches spent their time (stderr; `all`: every batch too).
const ROW_USERS = Number(process.env.REALTIME_BENCH_ROW_USERS ?? 500);
const ROW_TEAMS = 50;
const CLIENTS_PER_USER = 1_000 / ROW_USERS;
const ROOM_CLIENTS_PER_USER = 2;
const ROW_RATE = 100;
const ROW_SECONDS = 20;
const SUPABASE_JS_CLIENTS = 5;
const ROOMS = 100;
const USERS_PER_ROOM = 5;
const BROADCAST_RATE = 2_000;
const BROADCAST_SECONDS = 10;
const SSE_RUNS = 10;
const SSE_EVENTS_PER_RUN_PER_SECOND = 5;
const SSE_SECONDS = 10;
const SSE_FOLLOWERS = [10, 100, 1_000];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}
const ms = (n: number) => (Number.isNaN(n) ? 'n/a' : `${Math.round(n)} ms`);
const int = (n: number) => Math.round(n).toLocaleString('en-US');

async function until(probe: () => boolean, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > end) return false;
    await sleep(20);
  }
  return true;
}

/** A raw Phoenix vsn 2.0.0 client: one socket, one channel, frames handed to `onFrame`. */
class RawClient {
  readonly ws: WebSocket;
  private ref = 0;
  joinRef = '';
  topic = '';
  joined: 'pending' | 'ok' | 'error' = 'pending';
  joinError = '';
  private beat: NodeJS.Timeout | undefined;

  constructor(url: string, private readonly onFrame: (frame: unknown[] | Buffer) => void) {
    this.ws = new WebSocket(url, { perMessageDeflate: false });
    this.ws.binaryType = 'nodebuffer';
    this.ws.on('message', (data: Buffer, binary: boolean) => {
      if (binary) return this.onFrame(data);
      const frame = JSON.parse(data.toString('utf8')) as unknown[];
      if (frame[3] === 'phx_reply' && frame[1] === this.joinRef) {
        const payload = frame[4] as { status: string; response?: { reason?: string } };
        this.joined = payload.status === 'ok' ? 'ok' : 'error';
        this.joinError = payload.response?.reason ?? '';
        return;
      }
      this.onFrame(frame);
    });
  }

  opened(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.ws.once('open', () => {
        this.beat = setInterval(() => this.send(null, 'phoenix', 'heartbeat', {}), 25_000);
        resolve();
      });
      this.ws.once('error', reject);
    });
  }

  send(joinRef: string | null, topic: string, event: string, payload: unknown): void {
    this.ws.send(JSON.stringify([joinRef, String(++this.ref), topic, event, payload]));
  }

  join(topic: string, token: string, postgresChanges: unknown[] = []): void {
    this.topic = topic;
    this.joinRef = String(++this.ref);
    this.ws.send(JSON.stringify([this.joinRef, this.joinRef, topic, 'phx_join', {
      config: { broadcast: { ack: false, self: false }, presence: { key: '', enabled: false }, postgres_changes: postgresChanges, private: false },
      access_token: token,
    }]));
  }

  close(): void {
    clearInterval(this.beat);
    this.ws.terminate();
  }
}

/** Opens `count` raw clients, 50 at a time (a burst of 1,000 handshakes would only measure the accept queue). */
async function openClients(count: number, url: string, onFrame: (i: number, frame: unknown[] | Buffer) => void): Promise<RawClient[]> {
  const clients: RawClient[] = [];
  for (let i = 0; i < count; i += 50) {
    const batch = Array.from({ length: Math.min(50, count - i) }, (_, k) => new RawClient(url, (frame) => onFrame(i + k, frame)));
    await Promise.all(batch.map((c) => c.opened()));
    clients.push(...batch);
  }
  return clients;
}

async function joinAll(clients: RawClient[], join: (client: RawClient, i: number) => void, what: string): Promise<void> {
  for (let i = 0; i < clients.length; i += 50) {
    const batch = clients.slice(i, i + 50);
    batch.forEach((c, k) => join(c, i + k));
    if (!(await until(() => batch.every((c) => c.joined !== 'pending'), 30_000))) throw new Error(`realtime bench: ${what}: joins not answered in 30 s`);
  }
  const failed = clients.find((c) => c.joined !== 'ok');
  if (failed) throw new Error(`realtime bench: ${what}: join refused: ${failed.joinError}`);
}

interface Tenant { teamId: string; users: Array<{ id: string; jwt: string }> }

async function tenants(deps: AppDeps, teams: number, usersPerTeam: number, label: string): Promise<Tenant[]> {
  // Ten teams at a time: setting up 1,000 users one by one would take most of the section's time.
  const out: Tenant[] = [];
  for (let t0 = 0; t0 < teams; t0 += 10) out.push(...(await Promise.all(Array.from({ length: Math.min(10, teams - t0) }, (_, k) => tenant(t0 + k)))));
  return out;

  async function tenant(t: number): Promise<Tenant> {
    const owner = await createUser(deps.db, { email: `${label}-${t}-owner-${randomUUID().slice(0, 8)}@example.com`, name: 'Owner' });
    const team = await createTeam(deps.db, { ownerId: owner.id, name: `${label} ${t}` });
    const users = [owner];
    for (let u = 1; u < usersPerTeam; u++) {
      const member = await createUser(deps.db, { email: `${label}-${t}-${u}-${randomUUID().slice(0, 8)}@example.com`, name: 'Member' });
      await addTeamMember(deps.db, { teamId: team.id, userId: member.id, role: 'member' });
      users.push(member);
    }
    return { teamId: team.id, users: await Promise.all(users.map(async (u) => ({ id: u.id, jwt: await deps.idp.issue(u.id, 3600) }))) };
  }
}

interface Row { name: string; measured: string; goal: string; platform: string }

/** 1. Row changes: 1,000 clients (500 users in 50 teams) on `credit_transactions` INSERTs, 100 rows/s for 20 s. */
async function benchRowChanges(deps: AppDeps, origin: string, socketUrl: string, anonKey: string): Promise<Row[]> {
  const teams = await tenants(deps, ROW_TEAMS, ROW_USERS / ROW_TEAMS, 'rt-rows');
  const binding = { event: 'INSERT', schema: 'public', table: 'credit_transactions' };
  // Clients: user u of team t has CLIENTS_PER_USER clients; the first SUPABASE_JS_CLIENTS are supabase-js.
  const owners: Array<{ teamId: string; jwt: string }> = [];
  for (const team of teams) for (const user of team.users) for (let c = 0; c < CLIENTS_PER_USER; c++) owners.push({ teamId: team.teamId, jwt: user.jwt });
  // Spread the supabase-js clients over different teams.
  const supaIndexes = new Set(Array.from({ length: SUPABASE_JS_CLIENTS }, (_, k) => k * (owners.length / SUPABASE_JS_CLIENTS)));
  const received = owners.map(() => new Map<string, number>()); // row id → times delivered
  const delays: number[] = [];
  const sendDelays: number[] = [];
  let wrongTeam = 0;
  let duplicates = 0;
  const sentAtOf = new Map<string, number>();
  const teamOf = new Map<string, string>();
  const deliver = (i: number, record: { id: string; team_id: string }, commitTimestamp: string) => {
    const now = Date.now();
    if (record.team_id !== owners[i]!.teamId) wrongTeam++;
    const seen = received[i]!.get(record.id) ?? 0;
    if (seen > 0) duplicates++;
    received[i]!.set(record.id, seen + 1);
    delays.push(now - Date.parse(commitTimestamp));
    const sentAt = sentAtOf.get(record.id);
    if (sentAt !== undefined) sendDelays.push(now - sentAt);
  };

  const rawIndexes = owners.map((_, i) => i).filter((i) => !supaIndexes.has(i));
  const raw = await openClients(rawIndexes.length, socketUrl, (k, frame) => {
    if (Buffer.isBuffer(frame) || frame[3] !== 'postgres_changes') return;
    const data = (frame[4] as { data: { record: { id: string; team_id: string }; commit_timestamp: string } }).data;
    deliver(rawIndexes[k]!, data.record, data.commit_timestamp);
  });
  const supa: SupabaseClient[] = [];
  try {
    await joinAll(raw, (client, k) => client.join(`realtime:rows-${k}`, owners[rawIndexes[k]!]!.jwt, [binding]), 'row changes');
    for (const i of supaIndexes) {
      const client = createClient(origin, anonKey, { accessToken: async () => owners[i]!.jwt, realtime: { transport: WebSocket as never } });
      await client.realtime.setAuth();
      supa.push(client);
      await new Promise<void>((resolve, reject) => {
        client.channel(`rows-supabase-${i}`)
          .on('postgres_changes' as never, binding as never, (change: { new: { id: string; team_id: string }; commit_timestamp: string }) => deliver(i, change.new, change.commit_timestamp))
          .subscribe((status, error) => {
            if (status === 'SUBSCRIBED') resolve();
            else if (status !== 'CLOSED') reject(new Error(`realtime bench: supabase-js ${status}: ${error?.message ?? ''}`));
          });
      });
    }

    const batches: BatchTiming[] = [];
    if (process.env.REALTIME_BENCH_TIMING) observeBatches((timing) => { batches.push(timing); if (process.env.REALTIME_BENCH_TIMING === 'all') console.error(`[batch] ${Date.now() - start} ms ${JSON.stringify(timing)}`); });
    // The load: plain single-row INSERTs through the service's own pool, round robin over the teams,
    // paced by the clock (a late tick catches up), for ROW_SECONDS.
    const inserted = new Map<string, number>(); // team → rows
    let seq = 0;
    const start = Date.now();
    const inflight = new Set<Promise<unknown>>();
    while (Date.now() - start < ROW_SECONDS * 1000) {
      const due = Math.floor(((Date.now() - start) / 1000) * ROW_RATE);
      while (seq < due) {
        const teamId = teams[seq % teams.length]!.teamId;
        const id = randomUUID();
        sentAtOf.set(id, Date.now());
        teamOf.set(id, teamId);
        const p = deps.db.insertInto('credit_transactions').values({ id, team_id: teamId, amount_milli: 1, reason: 'bench', reference: `bench-${seq}`, created_by: null }).execute()
          .then(() => { inserted.set(teamId, (inserted.get(teamId) ?? 0) + 1); }, (e: unknown) => { console.error('realtime bench: insert failed', e); });
        inflight.add(p);
        void p.finally(() => inflight.delete(p));
        seq++;
      }
      await sleep(5);
    }
    await Promise.all(inflight);
    const elapsed = (Date.now() - start) / 1000;
    const owed = owners.reduce((sum, o) => sum + (inserted.get(o.teamId) ?? 0), 0);
    const delivered = () => received.reduce((sum, m) => sum + [...m.keys()].filter((id) => teamOf.get(id) !== undefined).length, 0);
    await until(() => delivered() - wrongTeam >= owed, 10_000);
    let missed = 0;
    owners.forEach((o, i) => {
      for (const [id, team] of teamOf) if (team === o.teamId && !received[i]!.has(id)) missed++;
    });
    observeBatches(null);
    if (batches.length) printBatchTimings(batches);
    const sorted = delays.sort((a, b) => a - b);
    const sortedSend = sendDelays.sort((a, b) => a - b);
    const goal = (v: number, limit: number) => (v <= limit ? 'met' : 'MISSED');
    return [
      { name: `row changes: clients subscribed (raw ws + ${SUPABASE_JS_CLIENTS} supabase-js), users, teams`, measured: `${int(owners.length)}, ${int(ROW_USERS)}, ${ROW_TEAMS}`, goal: '1,000, 500, 50', platform: '500 clients' },
      { name: 'row changes: inserts/s under RLS (credit_transactions, policy per team)', measured: `${(seq / elapsed).toFixed(1)} for ${elapsed.toFixed(0)} s (${int(seq)} rows)`, goal: '100', platform: '30' },
      { name: 'row changes: deliveries (owed)', measured: `${int(delivered())} (${int(owed)})`, goal: '–', platform: '–' },
      { name: 'row changes: delay from commit p50 / p95 / p99', measured: `${ms(percentile(sorted, 50))} / ${ms(percentile(sorted, 95))} / ${ms(percentile(sorted, 99))} (p95 ${goal(percentile(sorted, 95), 100)})`, goal: 'p95 ≤ 100 ms', platform: 'p95 228 ms' },
      { name: 'row changes: delay from the INSERT call p50 / p95 / p99', measured: `${ms(percentile(sortedSend, 50))} / ${ms(percentile(sortedSend, 95))} / ${ms(percentile(sortedSend, 99))}`, goal: '–', platform: '–' },
      { name: 'row changes: events to a client whose team does not own the row', measured: String(wrongTeam), goal: '0', platform: '–' },
      { name: 'row changes: events owed but not delivered (duplicates)', measured: `${missed} (${duplicates})`, goal: '0', platform: '–' },
    ];
  } finally {
    for (const client of supa) await client.removeAllChannels().catch(() => {});
    for (const client of raw) client.close();
  }
}

/** The row changes' batches: how many, and the median and p95 of each phase. */
function printBatchTimings(batches: BatchTiming[]): void {
  const stat = (pick: (b: BatchTiming) => number) => {
    const sorted = batches.map(pick).sort((a, b) => a - b);
    return `${percentile(sorted, 50).toFixed(1)} / ${percentile(sorted, 95).toFixed(1)}`;
  };
  console.error(`realtime bench: ${batches.length} batches (p50 / p95): transactions ${stat((b) => b.transactions)}, candidates ${stat((b) => b.candidates)}, checks ${stat((b) => b.checks)}, reader values computed ${stat((b) => b.computedValues)}, snapshots ${stat((b) => b.snapshots)}, events ${stat((b) => b.events)}`);
  console.error(`realtime bench: ms (p50 / p95): commit to dispatch ${stat((b) => b.waitedMs)}, match ${stat((b) => b.matchMs)}, authorize ${stat((b) => b.authorizeMs)}, push ${stat((b) => b.pushMs)}`);
}

/** 2. Broadcast: 1,000 clients in 100 `team:<id>` rooms, 2,000 messages/s sent by the clients for 10 s. */
async function benchBroadcast(deps: AppDeps, socketUrl: string): Promise<Row[]> {
  const rooms = await tenants(deps, ROOMS, USERS_PER_ROOM, 'rt-rooms');
  const owners: Array<{ room: number; jwt: string }> = [];
  rooms.forEach((room, r) => { for (const user of room.users) for (let c = 0; c < ROOM_CLIENTS_PER_USER; c++) owners.push({ room: r, jwt: user.jwt }); });
  const perRoom = owners.length / ROOMS;
  const delays: number[] = [];
  const got = new Map<number, number>(); // message → copies received
  let foreign = 0;
  const clients = await openClients(owners.length, socketUrl, (i, frame) => {
    let topic: string; let payload: { s: number; m: number; r: number };
    if (Buffer.isBuffer(frame)) {
      if (frame[0] !== 4) return;
      const topicLen = frame[1]!; const eventLen = frame[2]!; const metaLen = frame[3]!;
      topic = frame.toString('utf8', 5, 5 + topicLen);
      payload = JSON.parse(frame.toString('utf8', 5 + topicLen + eventLen + metaLen)) as typeof payload;
    } else {
      if (frame[3] !== 'broadcast') return;
      topic = frame[2] as string;
      payload = (frame[4] as { payload: typeof payload }).payload;
    }
    void topic;
    delays.push(Date.now() - payload.s);
    if (payload.r !== owners[i]!.room) foreign++;
    got.set(payload.m, (got.get(payload.m) ?? 0) + 1);
  });
  try {
    await joinAll(clients, (client, i) => client.join(`realtime:team:${rooms[owners[i]!.room]!.teamId}`, owners[i]!.jwt), 'broadcast');
    let sent = 0;
    const start = Date.now();
    while (Date.now() - start < BROADCAST_SECONDS * 1000) {
      const due = Math.floor(((Date.now() - start) / 1000) * BROADCAST_RATE);
      while (sent < due) {
        // Round robin over the clients: each sends BROADCAST_RATE / 1,000 messages/s.
        const i = sent % clients.length;
        const client = clients[i]!;
        client.send(client.joinRef, client.topic, 'broadcast', { type: 'broadcast', event: 'm', payload: { s: Date.now(), m: sent, r: owners[i]!.room } });
        sent++;
      }
      await sleep(2);
    }
    const elapsed = (Date.now() - start) / 1000;
    const owed = sent * (perRoom - 1);
    const total = () => { let n = 0; for (const v of got.values()) n += v; return n; };
    await until(() => total() >= owed, 10_000);
    const sorted = delays.sort((a, b) => a - b);
    const p95 = percentile(sorted, 95);
    return [
      { name: 'broadcast: clients, rooms (team:<id>, members only)', measured: `${int(owners.length)}, ${ROOMS}`, goal: '1,000, 100', platform: '–' },
      { name: 'broadcast: messages/s sent by clients', measured: `${int(sent / elapsed)} for ${elapsed.toFixed(0)} s (${int(sent)} messages, ${int(owed)} copies owed)`, goal: '2,000', platform: '–' },
      { name: 'broadcast: delay p50 / p95 / p99', measured: `${ms(percentile(sorted, 50))} / ${ms(p95)} / ${ms(percentile(sorted, 99))} (p95 ${p95 <= 50 ? 'met' : 'MISSED'})`, goal: 'p95 ≤ 50 ms', platform: '–' },
      { name: 'broadcast: copies lost (to another room)', measured: `${int(Math.max(0, owed - total()))} (${foreign})`, goal: '0 (0)', platform: '–' },
    ];
  } finally {
    for (const client of clients) client.close();
  }
}

async function xactCommits(db: Database): Promise<number> {
  const { rows } = await sql<{ n: string }>`select xact_commit + xact_rollback as n from pg_stat_database where datname = current_database()`.execute(db);
  return Number(rows[0]!.n);
}

async function statementCalls(db: Database): Promise<number | null> {
  try {
    const { rows } = await sql<{ n: string }>`select coalesce(sum(calls), 0) as n from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())`.execute(db);
    return Number(rows[0]!.n);
  } catch {
    return null;
  }
}

/** 3. Spec 4.1's run streams: 10, 100, 1,000 SSE followers of 10 runs, 50 events/s written. */
async function benchRunStreams(deps: AppDeps, origin: string): Promise<Row[]> {
  const owner = await createUser(deps.db, { email: `rt-sse-${randomUUID().slice(0, 8)}@example.com`, name: 'Owner' });
  const team = await createTeam(deps.db, { ownerId: owner.id, name: 'SSE' });
  const apiKey = (await createApiKey(deps.db, { teamId: team.id, createdBy: owner.id, name: 'bench' })).token;
  const { deploymentId, documentId } = await publishDirect(deps.db, exampleGraph, { teamId: team.id, publishedBy: owner.id });
  const runIds: string[] = [];
  for (let i = 0; i < SSE_RUNS; i++) {
    const id = randomUUID();
    runIds.push(id);
    // runs.project_id: the deployment's, filled by the table's trigger (migration 0023).
    await sql`insert into runs (id, deployment_id, document_id, team_id, inputs, trigger_source, status)
      values (${id}, ${deploymentId}, ${documentId}, ${team.id}, '{}', 'api-key', 'running')`.execute(deps.db);
  }
  // Every statement the API process sends goes through a checkout of its pool: counted at once,
  // where PostgreSQL's statistics lag (a backend reports them when it goes idle, seconds later).
  let checkouts = 0;
  const countCheckout = () => { checkouts++; };
  poolOf(deps.db)!.on('acquire', countCheckout);
  let key = 0;
  const rows: Row[] = [];
  const perFollowers: Array<{ followers: number; qps: number }> = [];
  for (const followers of SSE_FOLLOWERS) {
    const delays: number[] = [];
    const slowest = new Map<string, number>();
    let received = 0;
    const abort = new AbortController();
    let connected = 0;
    // Only the events written from now on: each follower resumes after the log's last id, and a
    // seed event per run (not measured) answers each follower at once, so its headers arrive.
    const { rows: [last] } = await sql<{ id: string | null }>`select max(id) as id from run_events`.execute(deps.db);
    const after = Number(last?.id ?? 0);
    for (const runId of runIds) await insertRunEvents(deps.db, runId, [{ key: `seed-${key++}`, event: { type: 'block_chunk', blockId: 'bench', delta: 'seed' } }]);
    const streams = Array.from({ length: followers }, async (_, f) => {
      const runId = runIds[f % SSE_RUNS]!;
      const res = await fetch(`${origin}/api/runs/${runId}/events?format=sse&after=${after}`, { headers: { authorization: `Bearer ${apiKey}` }, signal: abort.signal })
        .catch(() => null);
      if (!res || res.status !== 200 || !res.body) throw new Error(`realtime bench: run stream answered ${res?.status}`);
      connected++;
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return;
          buffer += decoder.decode(value, { stream: true });
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const frame = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const data = frame.split('\n').find((l) => l.startsWith('data: '));
            if (!data) continue;
            const event = JSON.parse(data.slice(6)) as { delta?: string };
            if (event.delta && event.delta !== 'seed') {
              delays.push(Date.now() - Number(event.delta)); received++;
              if (process.env.REALTIME_BENCH_DEBUG) slowest.set(event.delta, Math.max(slowest.get(event.delta) ?? 0, Date.now() - Number(event.delta)));
            }
          }
        }
      } catch {
        // aborted
      }
    });
    void Promise.all(streams).catch((e: unknown) => { console.error(e); });
    const t0 = Date.now();
    await until(() => connected === followers, 30_000);
    if (process.env.REALTIME_BENCH_DEBUG) console.error(`sse ${followers}: connected ${connected} in ${Date.now() - t0} ms`);
    await sleep(1_500); // each follower's first read done
    const checkouts0 = checkouts;
    const commits0 = await xactCommits(deps.db);
    const calls0 = await statementCalls(deps.db);
    const start = Date.now();
    let written = 0;
    while (Date.now() - start < SSE_SECONDS * 1000) {
      const due = Math.floor(((Date.now() - start) / 1000) * SSE_RUNS * SSE_EVENTS_PER_RUN_PER_SECOND);
      while (written < due) {
        const runId = runIds[written % SSE_RUNS]!;
        void insertRunEvents(deps.db, runId, [{ key: `bench-${key++}`, event: { type: 'block_chunk', blockId: 'bench', delta: String(Date.now()) } }]);
        written++;
      }
      await sleep(5);
    }
    const elapsed = (Date.now() - start) / 1000;
    const checkouts1 = checkouts;
    const commits1 = await xactCommits(deps.db);
    const calls1 = await statementCalls(deps.db);
    const owed = Array.from({ length: followers }, (_, f) => f % SSE_RUNS).reduce((sum, r) => sum + Math.floor(written / SSE_RUNS) + (r < written % SSE_RUNS ? 1 : 0), 0);
    const t1 = Date.now();
    await until(() => received >= owed, 10_000);
    if (process.env.REALTIME_BENCH_DEBUG) {
      console.error(`sse ${followers}: drained in ${Date.now() - t1} ms`);
      const worst = [...slowest].sort((a, b) => b[1] - a[1]).slice(0, 12);
      console.error(`sse ${followers}: slowest events (written at +ms: last copy's delay) ${worst.map(([at, d]) => `+${Number(at) - start}: ${d}`).join(', ')}`);
    }
    abort.abort();
    // The API's statements other than the writer's own (and the 2 probes): the followers' reads.
    const qps = (checkouts1 - checkouts0 - written - 2) / elapsed;
    // PostgreSQL's own count of transactions, a cross-check: backends report it up to seconds late,
    // so it also holds part of the connection phase's statements (auth, each follower's first read).
    if (process.env.REALTIME_BENCH_DEBUG) console.error(`sse ${followers}: server transactions ${int((commits1 - commits0 - written - 2) / elapsed)}/s`);
    perFollowers.push({ followers, qps });
    const sorted = delays.sort((a, b) => a - b);
    const p99 = percentile(sorted, 99);
    rows.push({
      name: `run streams: ${int(followers)} SSE followers of ${SSE_RUNS} runs, ${SSE_RUNS * SSE_EVENTS_PER_RUN_PER_SECOND} events/s written`,
      measured: `delay p50 ${ms(percentile(sorted, 50))}, p99 ${ms(p99)} (${p99 <= 50 ? 'met' : 'MISSED'}); ${int(received)}/${int(owed)} events; followers' queries ${int(qps)}/s${calls0 !== null && calls1 !== null ? ` (statements ${int((calls1 - calls0) / elapsed)}/s)` : ''}`,
      goal: 'p99 ≤ 50 ms; queries/s flat',
      platform: '–',
    });
    await sleep(500);
  }
  poolOf(deps.db)!.off('acquire', countCheckout);
  const first = perFollowers[0]!; const last = perFollowers.at(-1)!;
  const grows = last.qps > Math.max(first.qps * 2, first.qps + 50);
  rows.push({
    name: 'run streams: do PostgreSQL queries/s grow with the followers?',
    measured: `${grows ? 'YES' : 'no'}: ${perFollowers.map((p) => `${int(p.followers)} → ${int(p.qps)}/s`).join(', ')}`,
    goal: 'no',
    platform: '–',
  });
  return rows;
}

/** The three parts against one API process listening on loopback. */
export async function benchRealtime(deps: AppDeps, databaseUrl: string): Promise<Row[]> {
  // With DATABASE_URL known, as under `npm run api`: the bus listens on its own connection.
  const app = await buildApp({ ...deps, config: { ...deps.config, DATABASE_URL: databaseUrl } }, { logger: false });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const anonKey = anonKeysOf(deps.secrets).current!;
  const socketUrl = `${origin.replace(/^http/, 'ws')}/realtime/v1/websocket?apikey=${encodeURIComponent(anonKey)}&vsn=2.0.0`;
  // REALTIME_BENCH_PARTS=rows,broadcast,sse (default all): one part alone, e.g. under --cpu-prof.
  const parts = (process.env.REALTIME_BENCH_PARTS ?? 'rows,broadcast,sse').split(',');
  const rows: Row[] = [];
  const timed = async (part: string, run: () => Promise<Row[]>) => {
    if (!parts.includes(part)) return;
    const started = Date.now();
    rows.push(...(await run()));
    console.error(`realtime bench: ${part} took ${((Date.now() - started) / 1000).toFixed(0)} s`);
  };
  try {
    await timed('rows', () => benchRowChanges(deps, origin, socketUrl, anonKey));
    await timed('broadcast', () => benchBroadcast(deps, socketUrl));
    await timed('sse', () => benchRunStreams(deps, origin));
    return rows;
  } finally {
    const closing = Date.now();
    // The followers' aborted streams and the clients' keep-alive connections: not worth waiting for.
    app.server.closeAllConnections();
    await app.close();
    if (process.env.REALTIME_BENCH_DEBUG) console.error(`app.close took ${Date.now() - closing} ms`);
  }
}

export function printRealtime(rows: Row[]): void {
  console.log('\n| realtime (issue 37) and run streams (4.1), one API process in the bench process | measured | goal | hosted platform, smallest instance with RLS |\n|---|---|---|---|');
  for (const row of rows) console.log(`| ${row.name} | ${row.measured} | ${row.goal} | ${row.platform} |`);
}

/** `npm run bench -- --only realtime`: this section alone, on a PostgreSQL and Temporal of its own. */
export async function runRealtimeBenchAlone(): Promise<void> {
  await withOwnStack('realtime', async (deps, databaseUrl) => {
    const started = Date.now();
    printRealtime(await benchRealtime(deps, databaseUrl));
    console.log(`\n(section time ${((Date.now() - started) / 1000).toFixed(0)} s; one run on a shared machine; clients and load generators share the API's process and cores)`);
  });
}
