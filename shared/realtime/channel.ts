import { randomUUID } from 'node:crypto';
import type { DataApiIdentity } from '../data-api/identity.js';
import type { ChannelSink } from './hub.js';
import type { ChangeBinding } from './postgres-changes.js';
import { encodeFrame, type Vsn } from './serializer.js';
import type { MemberTopic } from './topics.js';

/** The longest a token-expiry timer waits at once (setTimeout's limit is about 24 days). */
const MAX_TIMER_MS = 60 * 60 * 1000;

/** One joined channel of a socket: what the join asked for and who it acts as. */
export class JoinedChannel implements ChannelSink {
  readonly id = randomUUID();
  presenceSynced = false;
  private expiryTimer: NodeJS.Timeout | null = null;
  /** Set by the socket: ends the channel with `phx_error` (the client rejoins) when it missed row changes. */
  onInterrupt: (reason: string) => void = () => {};

  constructor(
    readonly topic: string,
    readonly subTopic: string,
    readonly joinRef: string | null,
    readonly vsn: Vsn,
    readonly member: MemberTopic | null,
    readonly config: { selfBroadcast: boolean; ack: boolean; presenceKey: string; presenceEnabled: boolean },
    readonly bindings: readonly ChangeBinding[],
    public identity: DataApiIdentity,
    public token: string | null,
    private readonly sendFrame: (data: string | Buffer) => void,
  ) {}

  get selfBroadcast(): boolean {
    return this.config.selfBroadcast;
  }

  send(data: string | Buffer): void {
    this.sendFrame(data);
  }

  /** Pushes a server event on this channel (e.g. `postgres_changes` `{ ids, data }` from the change capture). */
  push(event: string, payload: unknown): void {
    this.sendFrame(encodeFrame(this.vsn, this.joinRef, null, this.topic, event, payload));
  }

  /** This channel missed row changes (capture lost, a batch dropped): it must rejoin and refetch. */
  interrupt(reason: string): void {
    this.onInterrupt(reason);
  }

  /** Calls `onExpired` when the identity's JWT expires (nothing for the anon role). A new identity restarts it. */
  watchExpiry(onExpired: (secondsAgo: number) => void): void {
    this.stopExpiry();
    const exp = this.identity.role === 'authenticated' ? this.identity.claims.exp : undefined;
    if (exp === undefined) return;
    const wait = exp * 1000 - Date.now();
    if (wait <= 0) {
      onExpired(Math.floor(-wait / 1000));
      return;
    }
    this.expiryTimer = setTimeout(() => this.watchExpiry(onExpired), Math.min(wait, MAX_TIMER_MS));
    this.expiryTimer.unref();
  }

  stopExpiry(): void {
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    this.expiryTimer = null;
  }
}
