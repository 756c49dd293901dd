// Realtime subscribers through the kills (issue 43, the topology's chaos run): a few unmodified
// supabase-js clients on the origin's websocket (nginx → either API), each a team member
// subscribed to the row changes of the team's runs, which the chaos clients and the schedule keep
// changing. supabase-js reconnects a dropped socket and rejoins an errored channel by itself, with
// its own backoff (1, 2, 5, 10 s), as in a browser. Counted after the kills: every drop followed
// by a rejoin, soon after the outage that caused it ended, and one last row change reaching all.
import { randomUUID } from 'node:crypto';
import type { SupabaseClient } from '@supabase/supabase-js';
import type { IdentityProvider } from '../../shared/credentials/identity-provider.js';
import type { Database } from '../../shared/db/client.js';
import { addTeamMember, createUser } from '../../shared/identity/service.js';
import { supabaseFor } from '../../test/realtime/clients.js';
import type { KillRecord } from './kill.js';
import { callThroughOrigin, type OriginTarget } from './origin.js';
import { median, until } from './timing.js';

export const SUBSCRIBERS = 4;
/** A subscriber must be joined again this soon after the outage that dropped it ended (supabase-js waits up to 10 s between tries). */
export const REJOIN_BOUND_MS = 10_000;
/** The last row change must reach every subscriber within this. */
const FINAL_CHANGE_TIMEOUT_MS = 30_000;

export interface SubscriberLog {
  index: number;
  /** Every status supabase-js reported to the channel's subscribe callback, in order. */
  statuses: Array<{ at: number; status: string; error?: string }>;
  changes: number;
  /** Ids of the runs whose changes arrived. */
  runIds: Set<string>;
}

export interface Subscribers {
  logs: SubscriberLog[];
  stop(): Promise<void>;
}

export interface RealtimeTarget { apiUrl: string; anonKey: string; teamId: string }

/** A team member's login for the subscribers (they read the team's runs under row-level security). */
export async function subscriberToken(db: Database, idp: IdentityProvider, teamId: string): Promise<string> {
  const user = await createUser(db, { email: `chaos-subscriber-${randomUUID().slice(0, 8)}@example.com`, name: 'chaos subscriber' });
  await addTeamMember(db, { teamId, userId: user.id, role: 'member' });
  return idp.issue(user.id, 4 * 3600);
}

/** Starts `count` subscribers and resolves once each is subscribed (its first join). */
export async function startSubscribers(target: RealtimeTarget, jwt: string, count = SUBSCRIBERS): Promise<Subscribers> {
  const clients: SupabaseClient[] = [];
  const logs: SubscriberLog[] = [];
  for (let index = 0; index < count; index++) {
    const client = supabaseFor(target.apiUrl, target.anonKey, () => jwt);
    await client.realtime.setAuth(); // the first join carries the token (docs/realtime.md "The first join")
    const log: SubscriberLog = { index, statuses: [], changes: 0, runIds: new Set() };
    client.channel(`chaos-runs-${index}`)
      .on('postgres_changes', { event: '*', schema: 'public', table: 'runs', filter: `team_id=eq.${target.teamId}` }, (change) => {
        log.changes += 1;
        const id = (change.new as { id?: string } | undefined)?.id;
        if (id) log.runIds.add(id);
      })
      .subscribe((status, error) => { log.statuses.push({ at: Date.now(), status, ...(error ? { error: error.message } : {}) }); });
    clients.push(client);
    logs.push(log);
  }
  const stop = async () => {
    for (const client of clients) {
      await client.removeAllChannels().catch(() => {});
      client.realtime.disconnect();
    }
  };
  await until(async () => (logs.every((log) => log.statuses.some((s) => s.status === 'SUBSCRIBED')) ? true : undefined), 60_000, 'realtime subscribers joining', 100)
    .catch(async (error: Error) => {
      await stop();
      throw new Error(`${error.message}: ${JSON.stringify(logs.map((log) => log.statuses.at(-1) ?? null))}`, { cause: error });
    });
  return { logs, stop };
}

export interface RealtimeFigures {
  subscribers: number;
  /** Row changes each subscriber received over the whole run. */
  changesReceived: number[];
  /** Each time a joined channel stopped being joined (CHANNEL_ERROR, CLOSED, TIMED_OUT), and its rejoin. */
  drops: number;
  /** Drops by the target of the kill before them, and how long the channels were not joined (drop to rejoin). */
  dropsByTarget: Record<string, { drops: number; downMedianMs: number | null; downMaxMs: number | null }>;
  rejoins: Array<{ subscriber: number; child: string | null; downMs: number | null; afterOutageMs: number | null }>;
  /** The longest time from an outage's end (or the drop, when later) to the rejoin. */
  rejoinAfterOutageMaxMs: number | null;
  /** Subscribers that received the row changes of the run made after the kills. */
  finalChangeReceived: number;
  /** Each must be 0. */
  violations: { notRejoined: number; lateRejoins: number; finalChangeMissed: number };
}

interface Drop { subscriber: number; at: number; rejoinedAt: number | null }

/** Joined → not joined → joined again, from a subscriber's statuses (its first join left out). */
function dropsOf(log: SubscriberLog): Drop[] {
  const drops: Drop[] = [];
  let joined = false;
  let open: Drop | null = null;
  for (const { at, status } of log.statuses) {
    if (status === 'SUBSCRIBED') {
      if (open) open.rejoinedAt = at;
      open = null;
      joined = true;
    } else if (joined) {
      joined = false;
      open = { subscriber: log.index, at, rejoinedAt: null };
      drops.push(open);
    }
  }
  return drops;
}

/**
 * After the kills: makes one row change (`change()`: a run through the origin, returning its id),
 * waits for it at every subscriber, and measures each drop against the kill before it: from the
 * outage's end (the killed child back and the API ready) or from the drop when it came later, to
 * the rejoin.
 */
export async function countSubscribers(subscribers: Subscribers, kills: KillRecord[], change: () => Promise<string>): Promise<RealtimeFigures> {
  const { logs } = subscribers;
  const runId = await change();
  await until(async () => (logs.every((log) => log.runIds.has(runId)) ? true : undefined), FINAL_CHANGE_TIMEOUT_MS, 'the last row change at every subscriber', 100)
    .catch(() => {});
  const rejoins = logs.flatMap(dropsOf).map((drop) => {
    const kill = kills.filter((k) => k.at <= drop.at).at(-1);
    const outageEnd = kill && kill.healMs !== null ? kill.at + kill.healMs : drop.at;
    return {
      subscriber: drop.subscriber, child: kill?.child ?? null,
      downMs: drop.rejoinedAt === null ? null : drop.rejoinedAt - drop.at,
      afterOutageMs: drop.rejoinedAt === null ? null : Math.max(0, drop.rejoinedAt - Math.max(outageEnd, drop.at)),
    };
  });
  const targetOf = (child: string | null) => kills.find((k) => k.child === child)?.target ?? 'none';
  const dropsByTarget = Object.fromEntries([...new Set(rejoins.map((r) => targetOf(r.child)))].map((target) => {
    const down = rejoins.filter((r) => targetOf(r.child) === target).flatMap((r) => (r.downMs === null ? [] : [r.downMs]));
    return [target, { drops: rejoins.filter((r) => targetOf(r.child) === target).length, downMedianMs: median(down), downMaxMs: down.length ? Math.max(...down) : null }];
  }));
  const measured = rejoins.flatMap((r) => (r.afterOutageMs === null ? [] : [r.afterOutageMs]));
  const finalChangeReceived = logs.filter((log) => log.runIds.has(runId)).length;
  return {
    subscribers: logs.length,
    changesReceived: logs.map((log) => log.changes),
    drops: rejoins.length,
    dropsByTarget,
    rejoins,
    rejoinAfterOutageMaxMs: measured.length ? Math.max(...measured) : null,
    finalChangeReceived,
    violations: {
      notRejoined: rejoins.filter((r) => r.afterOutageMs === null).length,
      lateRejoins: measured.filter((ms) => ms > REJOIN_BOUND_MS).length,
      finalChangeMissed: logs.length - finalChangeReceived,
    },
  };
}

/** The last row change: a run of the demo app through the origin (its API key), sent again while the answer is an outage's. */
export async function runThroughOrigin(target: OriginTarget & { deploymentId: string }): Promise<string> {
  const run = await callThroughOrigin(target, 'POST', `/api/released-app/${target.deploymentId}/run`, { inputs: { name: 'Ada', n: 1 }, stream: false });
  return run.runId as string;
}
