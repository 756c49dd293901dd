import { randomUUID } from 'node:crypto';
import type { WebSocket } from 'ws';
import type { Database } from '../db/client.js';
import { ANON_KEY_PREFIX, type DataApiIdentity, type DataApiIdentityResolver } from '../data-api/identity.js';
import { mayJoinMemberTopic } from './authorization.js';
import { JoinedChannel } from './channel.js';
import type { RealtimeHub } from './hub.js';
import { RateBucket, type RealtimeLimits } from './limits.js';
import type { ChangeFeed } from './changes/feed.js';
import { BindingError, echoBindings, validateBindings, type ChangeSubscriptions } from './postgres-changes.js';
import type { RelationCatalog } from './relations.js';
import { decodeFrame, encodeFrame, FrameError, type Frame, type Vsn } from './serializer.js';
import { memberTopicOf, subTopicOf } from './topics.js';

export interface SessionDeps {
  db: Database;
  identity: DataApiIdentityResolver;
  hub: RealtimeHub;
  catalog: RelationCatalog;
  changes: ChangeSubscriptions<JoinedChannel>;
  feed: ChangeFeed | null;
  limits: RealtimeLimits;
  log: RealtimeLog;
}

/** Where realtime reports: `info` for what clients do (closed for a limit), `warn` for what needs a look. */
export type RealtimeLog = (level: 'info' | 'warn', message: string, fields?: Record<string, unknown>) => void;

type Payload = Record<string, unknown>;

const MEMBER_TOPICS_ONLY = 'Broadcast and presence work only on the topics team:<id>, project:<id> and document:<id>';
/** Frames waiting behind a slow join at most; more means the client does not wait for replies. */
const MAX_PENDING_FRAMES = 1_000;
/** How long a socket closed for a limit may take to say goodbye before it is cut. */
const CLOSE_GRACE_MS = 5_000;

const asObject = (value: unknown): Payload => (value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Payload) : {});

/**
 * One websocket of `/realtime/v1/websocket`: the Phoenix channel state machine (join, leave,
 * heartbeat, access_token, broadcast, presence) for the channels it joins, and the socket's limits.
 * Frames are handled one after another, in arrival order, even when a join waits for the database.
 */
export class RealtimeSocket {
  readonly id = randomUUID();
  private readonly channels = new Map<string, JoinedChannel>();
  private chain: Promise<void> = Promise.resolve();
  private pending = 0;
  private closed = false;
  private readonly frames: RateBucket;
  private readonly broadcasts: RateBucket;
  private idleTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly ws: WebSocket,
    readonly vsn: Vsn,
    private readonly apikey: string,
    private readonly deps: SessionDeps,
  ) {
    this.frames = new RateBucket(deps.limits.framesPerSecond);
    this.broadcasts = new RateBucket(deps.limits.broadcastsPerSecond);
    ws.on('message', (data: Buffer, isBinary: boolean) => this.onMessage(data, isBinary));
    ws.on('close', () => this.teardown());
    ws.on('error', () => this.teardown());
    this.touch();
  }

  /** Channels joined now. */
  get channelCount(): number {
    return this.channels.size;
  }

  /** Closes the socket (graceful shutdown of the API: 1001 "going away", clients reconnect elsewhere). */
  close(code = 1001, reason = 'server shutting down'): void {
    this.teardown();
    this.ws.close(code, reason);
    setTimeout(() => this.ws.terminate(), CLOSE_GRACE_MS).unref();
  }

  // ---- inbound

  private onMessage(data: Buffer, isBinary: boolean): void {
    if (this.closed) return;
    this.touch();
    if (!this.frames.take()) return this.refuseSocket(1008, 'Too many messages per second');
    let frame: Frame;
    try {
      frame = decodeFrame(data, isBinary, this.vsn);
    } catch (error) {
      if (error instanceof FrameError) return this.refuseSocket(1007, error.message);
      throw error;
    }
    if (++this.pending > MAX_PENDING_FRAMES) return this.refuseSocket(1008, 'Too many frames waiting for replies');
    this.chain = this.chain
      .then(() => (this.closed ? undefined : this.handle(frame)))
      .catch((error: Error) => this.deps.log('warn', 'realtime frame failed', { err: error.message, event: frame.event }))
      .finally(() => { this.pending--; });
  }

  private async handle(frame: Frame): Promise<void> {
    if (frame.topic === 'phoenix' && frame.event === 'heartbeat') return this.reply(frame, 'ok', {});
    if (frame.event === 'phx_join') return this.join(frame);
    const channel = this.channels.get(frame.topic);
    if (!channel || (frame.joinRef !== null && frame.joinRef !== channel.joinRef)) return this.reply(frame, 'error', { reason: 'unmatched topic' });
    switch (frame.event) {
      case 'phx_leave':
        this.removeChannel(channel);
        return this.reply(frame, 'ok', {});
      case 'access_token':
        return this.refreshToken(channel, asObject(frame.payload).access_token);
      case 'broadcast':
        return this.broadcast(channel, frame);
      case 'presence':
        return this.presence(channel, frame);
      default:
        return; // as the real server: other events are ignored
    }
  }

  // ---- join

  private async join(frame: Frame): Promise<void> {
    const joinRef = frame.joinRef ?? frame.ref;
    const subTopic = subTopicOf(frame.topic);
    const refuse = (reason: string, extension = 'system') => this.refuseJoin(frame, joinRef, subTopic ?? frame.topic, reason, extension);
    if (subTopic === null) return this.reply(frame, 'error', { reason: 'unmatched topic' });
    if (subTopic === '') return refuse('TopicNameRequired: You must provide a topic name');
    if (Buffer.byteLength(frame.topic) > this.deps.limits.maxTopicBytes) return refuse(`TopicNameTooLong: a topic has at most ${this.deps.limits.maxTopicBytes} bytes`);
    const existing = this.channels.get(frame.topic);
    if (!existing && this.channels.size >= this.deps.limits.maxChannelsPerSocket) return refuse('ChannelRateLimitReached: Too many channels');

    const payload = asObject(frame.payload);
    const config = asObject(payload.config);
    const broadcast = asObject(config.broadcast);
    const presence = asObject(config.presence);
    const rawToken = payload.access_token ?? payload.user_token;
    const token = typeof rawToken === 'string' && rawToken !== '' ? rawToken : null;

    const identity = await this.identify(token);
    if ('error' in identity) return refuse(`InvalidJWTToken: ${identity.error}`);

    const member = memberTopicOf(subTopic);
    const presenceEnabled = presence.enabled === true;
    if (member) {
      const userId = identity.role === 'authenticated' ? identity.userId : null;
      if (!(await mayJoinMemberTopic(this.deps.db, userId, member))) return refuse(`Unauthorized: You do not have permissions to read from this Channel topic: ${subTopic}`);
    } else if (presenceEnabled) {
      return refuse(`Unauthorized: ${MEMBER_TOPICS_ONLY}`);
    }

    let bindings;
    try {
      const requested = config.postgres_changes;
      bindings = Array.isArray(requested) && requested.length ? validateBindings(requested, await this.deps.catalog.columns()) : validateBindings(requested, new Map());
    } catch (error) {
      if (error instanceof BindingError) return refuse(error.message, 'postgres_changes');
      throw error;
    }
    // The slot must exist before the reply: every change committed after it is then delivered.
    let stream: number | null = null;
    if (bindings.length && this.deps.feed) {
      try {
        stream = await this.deps.feed.ready();
      } catch (error) {
        return refuse(`Unable to subscribe to changes: ${(error as Error).message}`, 'postgres_changes');
      }
    }
    if (this.closed) return;
    if (existing) this.removeChannel(existing);

    const channel = new JoinedChannel(
      frame.topic, subTopic, joinRef, this.vsn, member,
      {
        selfBroadcast: broadcast.self === true,
        ack: broadcast.ack === true,
        presenceKey: typeof presence.key === 'string' && presence.key !== '' ? presence.key : randomUUID(),
        presenceEnabled,
      },
      bindings, identity, token, (data) => this.send(data),
    );
    channel.onInterrupt = (reason) => this.interrupt(channel, reason);
    this.channels.set(frame.topic, channel);
    this.deps.hub.join(channel);
    if (bindings.length) this.deps.changes.add(channel, bindings);
    channel.watchExpiry((secondsAgo) => this.shutdown(channel, `Token has expired ${secondsAgo} seconds ago`));
    this.reply(frame, 'ok', { postgres_changes: echoBindings(bindings) }, joinRef);
    if (presenceEnabled) this.syncPresence(channel);
    if (bindings.length) this.system(channel, 'postgres_changes', 'ok', 'Subscribed to PostgreSQL');
    // The stream it waited for was lost before the channel was registered: rejoin at once.
    if (stream !== null && !this.deps.feed!.stillReading(stream)) channel.interrupt('Lost the connection to the database log; rejoin and refetch');
  }

  /** The identity a join or token push acts as: no token (or the anon key) is the anon role. */
  private async identify(token: string | null): Promise<DataApiIdentity | { error: string }> {
    const headers: Record<string, string> = { apikey: this.apikey };
    if (token !== null) headers.authorization = `Bearer ${token}`;
    try {
      return await this.deps.identity.resolve({ headers });
    } catch (error) {
      return { error: (error as Error).message };
    }
  }

  /** The Phoenix error reply, then a `system` message saying why (as the real server does on a shutdown). */
  private refuseJoin(frame: Frame, joinRef: string | null, subTopic: string, reason: string, extension: string): void {
    this.reply(frame, 'error', { reason }, joinRef);
    this.send(encodeFrame(this.vsn, joinRef, null, frame.topic, 'system', { extension, status: 'error', message: reason, channel: subTopic }));
  }

  // ---- access_token

  private async refreshToken(channel: JoinedChannel, raw: unknown): Promise<void> {
    if (typeof raw !== 'string' || raw === '' || raw === channel.token) return;
    if (raw.startsWith(ANON_KEY_PREFIX) && channel.identity.role === 'anon') return;
    const identity = await this.identify(raw);
    if (this.channels.get(channel.topic) !== channel) return;
    if ('error' in identity) return this.shutdown(channel, `InvalidJWTToken: ${identity.error}`);
    if (channel.member) {
      const userId = identity.role === 'authenticated' ? identity.userId : null;
      if (!(await mayJoinMemberTopic(this.deps.db, userId, channel.member))) {
        return this.shutdown(channel, `You no longer have permission to read from this Channel topic: ${channel.subTopic}`);
      }
    }
    if (this.channels.get(channel.topic) !== channel) return;
    channel.identity = identity;
    channel.token = raw;
    channel.watchExpiry((secondsAgo) => this.shutdown(channel, `Token has expired ${secondsAgo} seconds ago`));
  }

  // ---- broadcast

  private broadcast(channel: JoinedChannel, frame: Frame): void {
    if (!channel.member) {
      this.reply(frame, 'error', { reason: MEMBER_TOPICS_ONLY });
      return this.system(channel, 'broadcast', 'error', MEMBER_TOPICS_ONLY);
    }
    if (!this.broadcasts.take()) return this.shutdown(channel, 'ClientBroadcastRateLimitReached: Too many messages per second');
    let message;
    if (frame.broadcast) {
      message = { topic: channel.topic, event: frame.broadcast.event, encoding: frame.broadcast.encoding, bytes: frame.broadcast.bytes };
    } else {
      const payload = asObject(frame.payload);
      if (typeof payload.event !== 'string' || Buffer.byteLength(payload.event) > 255) return this.reply(frame, 'error', { reason: 'A broadcast needs a string event of at most 255 bytes' });
      message = { topic: channel.topic, event: payload.event, encoding: 'json' as const, bytes: Buffer.from(JSON.stringify(payload.payload ?? {}), 'utf8') };
    }
    if (message.bytes.length > this.deps.limits.maxBroadcastBytes) {
      const reason = `PayloadTooLarge: a broadcast payload has at most ${this.deps.limits.maxBroadcastBytes} bytes`;
      this.reply(frame, 'error', { reason });
      return this.system(channel, 'broadcast', 'error', reason);
    }
    this.deps.hub.broadcast(message, channel);
    if (channel.config.ack && frame.ref !== null) this.reply(frame, 'ok', {});
  }

  // ---- presence

  private presence(channel: JoinedChannel, frame: Frame): void {
    if (!channel.member) return this.reply(frame, 'error', { reason: MEMBER_TOPICS_ONLY });
    const payload = asObject(frame.payload);
    if (payload.event === 'track') {
      const meta = payload.payload;
      if (meta === null || typeof meta !== 'object' || Array.isArray(meta)) return this.reply(frame, 'error', { reason: 'Presence track payload must be a map' });
      if (Buffer.byteLength(JSON.stringify(meta)) > this.deps.limits.maxPresenceBytes) return this.shutdown(channel, 'Track message size exceeded');
      // A track can be what turns presence on for this channel: send the state it never got at join.
      if (!channel.presenceSynced) this.syncPresence(channel);
      this.deps.hub.presence.track(channel.topic, channel.id, channel.config.presenceKey, meta as Payload);
      return this.reply(frame, 'ok', {});
    }
    if (payload.event === 'untrack') {
      this.deps.hub.presence.untrack(channel.id);
      return this.reply(frame, 'ok', {});
    }
    return this.reply(frame, 'error', { reason: 'A presence event is track or untrack' });
  }

  private syncPresence(channel: JoinedChannel): void {
    channel.presenceSynced = true;
    channel.push('presence_state', this.deps.hub.presence.state(channel.topic));
  }

  // ---- outbound

  private reply(frame: Frame, status: 'ok' | 'error', response: Payload, joinRef: string | null = frame.joinRef): void {
    this.send(encodeFrame(this.vsn, joinRef, frame.ref, frame.topic, 'phx_reply', { status, response }));
  }

  private system(channel: JoinedChannel, extension: string, status: 'ok' | 'error', message: string): void {
    channel.push('system', { extension, status, message, channel: channel.subTopic });
  }

  /**
   * The channel missed row changes: a `system` error saying why, then `phx_error`, on which
   * supabase-js rejoins by itself (CHANNEL_ERROR, then SUBSCRIBED again: the moment to refetch).
   */
  private interrupt(channel: JoinedChannel, reason: string): void {
    if (this.channels.get(channel.topic) !== channel) return;
    this.system(channel, 'postgres_changes', 'error', reason);
    channel.push('phx_error', { reason });
    this.removeChannel(channel);
  }

  /** Closes one channel from the server side: a `system` error saying why, then `phx_close`. */
  private shutdown(channel: JoinedChannel, message: string): void {
    if (this.channels.get(channel.topic) !== channel) return;
    this.system(channel, 'system', 'error', message);
    this.send(encodeFrame(this.vsn, channel.joinRef, channel.joinRef, channel.topic, 'phx_close', {}));
    this.removeChannel(channel);
  }

  private send(data: string | Buffer): void {
    if (this.closed) return;
    if (this.ws.bufferedAmount + data.length > this.deps.limits.maxBufferedBytes) return this.overflow();
    this.ws.send(data);
  }

  /** A client that does not read: no more buffering; each channel is told why, then the socket closes. */
  private overflow(): void {
    const message = `Client too slow: more than ${this.deps.limits.maxBufferedBytes} bytes waiting to be read; disconnected`;
    for (const channel of this.channels.values()) {
      this.ws.send(encodeFrame(this.vsn, channel.joinRef, null, channel.topic, 'system', { extension: 'system', status: 'error', message, channel: channel.subTopic }));
    }
    this.deps.log('info', 'realtime client too slow; disconnected', { socket: this.id });
    this.close(1008, 'client too slow');
  }

  /** Ends the socket for breaking a socket-wide limit or the protocol (close code and reason say which). */
  private refuseSocket(code: number, reason: string): void {
    this.deps.log('info', 'realtime socket closed', { socket: this.id, code, reason });
    this.close(code, reason.slice(0, 120));
  }

  private removeChannel(channel: JoinedChannel): void {
    channel.stopExpiry();
    this.channels.delete(channel.topic);
    this.deps.hub.leave(channel);
    this.deps.changes.remove(channel);
  }

  private touch(): void {
    if (this.idleTimer) this.idleTimer.refresh();
    else this.idleTimer = setTimeout(() => this.refuseSocket(1000, 'idle: no heartbeat'), this.deps.limits.idleTimeoutMs).unref();
  }

  private teardown(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    for (const channel of [...this.channels.values()]) this.removeChannel(channel);
  }
}
