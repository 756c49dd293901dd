import type { WebSocket } from 'ws';
import type { DataApiIdentityResolver } from '../data-api/identity.js';
import { poolOf, type Database } from '../db/client.js';
import { PgListener } from '../db/listener.js';
import { LocalBus, PgBus, type Bus } from './bus.js';
import type { CaptureLimits } from './changes/capture.js';
import { ChangeFeed } from './changes/feed.js';
import type { JoinedChannel } from './channel.js';
import { RealtimeHub } from './hub.js';
import { DEFAULT_LIMITS, type RealtimeLimits } from './limits.js';
import { ChangeSubscriptions } from './postgres-changes.js';
import { RelationCatalog } from './relations.js';
import { SUPPORTED_VSN, type Vsn } from './serializer.js';
import { RealtimeSocket, type RealtimeLog } from './socket-session.js';

export interface Realtime {
  readonly limits: RealtimeLimits;
  /** Who listens to which relation's changes (for the change capture). */
  readonly changes: ChangeSubscriptions<JoinedChannel>;
  /** The row changes from PostgreSQL's log (null: no database to read from). */
  readonly feed: ChangeFeed | null;
  readonly hub: RealtimeHub;
  /** Sockets and joined channels now (for the metrics). */
  stats(): { sockets: number; channels: number };
  /** Takes over an upgraded websocket whose anon key was checked. */
  accept(ws: WebSocket, vsn: Vsn, apikey: string): RealtimeSocket;
  /** Closes every socket (1001, "going away"): synchronous, so a shutdown stops listening at once. */
  closeSockets(): void;
  /** Closes what is left open, says goodbye on the bus and stops listening. */
  close(): Promise<void>;
}

export const vsnOf = (value: unknown): Vsn | null => {
  const vsn = value === undefined ? '1.0.0' : value;
  return SUPPORTED_VSN.includes(vsn as Vsn) ? (vsn as Vsn) : null;
};

/**
 * Realtime for one API process. With a database URL it listens on PostgreSQL for the other
 * processes' broadcasts and presence (one extra connection); without one it is alone.
 */
export async function startRealtime(deps: {
  db: Database;
  identity: DataApiIdentityResolver;
  databaseUrl?: string;
  limits?: Partial<RealtimeLimits>;
  captureLimits?: CaptureLimits;
  log?: RealtimeLog;
}): Promise<Realtime> {
  const log = deps.log ?? (() => {});
  const limits = { ...DEFAULT_LIMITS, ...deps.limits };
  let listener: PgListener | null = null;
  let bus: Bus;
  let stopped = false;
  let starting: Promise<void> = Promise.resolve();
  if (deps.databaseUrl) {
    const pgListener = (listener = new PgListener(deps.databaseUrl, (error) => log('warn', 'realtime listener', { err: error.message })));
    bus = new PgBus(deps.db, pgListener, (message) => log('info', message));
    // While PostgreSQL is away at start this process still serves its own sockets, and tries
    // again every second (once up, PgListener reconnects by itself).
    const listen = () => {
      if (stopped) return;
      starting = pgListener.start().catch((error: Error) => {
        log('warn', 'realtime listener cannot connect yet; retrying', { err: error.message });
        setTimeout(listen, 1_000).unref();
      });
    };
    listen();
    await starting;
  } else {
    bus = new LocalBus();
  }
  const hub = new RealtimeHub(bus);
  const changes = new ChangeSubscriptions<JoinedChannel>();
  const catalog = new RelationCatalog(deps.db);
  // Row changes read the log of the service's database: DATABASE_URL, or under `npm start` the URL
  // its pool was made with (one process: the bus stays local, the changes still come from the log).
  const logUrl = deps.databaseUrl ?? (poolOf(deps.db) as unknown as { options?: { connectionString?: string } } | undefined)?.options?.connectionString;
  const feed = logUrl ? new ChangeFeed({ url: logUrl, db: deps.db, catalog, subscriptions: changes, log, limits: deps.captureLimits }) : null;
  const sockets = new Set<RealtimeSocket>();
  const closeSockets = () => {
    for (const socket of sockets) socket.close();
    sockets.clear();
  };

  return {
    limits, changes, feed, hub,
    accept(ws, vsn, apikey) {
      const socket = new RealtimeSocket(ws, vsn, apikey, { db: deps.db, identity: deps.identity, hub, catalog, changes, feed, limits, log });
      sockets.add(socket);
      ws.on('close', () => sockets.delete(socket));
      return socket;
    },
    closeSockets,
    stats() {
      let channels = 0;
      for (const socket of sockets) channels += socket.channelCount;
      return { sockets: sockets.size, channels };
    },
    async close() {
      stopped = true;
      closeSockets();
      await feed?.close();
      await hub.close().catch(() => {});
      if (bus instanceof PgBus) bus.close();
      await starting;
      await listener?.close();
    },
  };
}
