import type { Bus, BusMessage } from './bus.js';
import { PresenceTracker, type PresenceDiff } from './presence.js';
import { EncodedBroadcast, encodeFrame, type BroadcastMessage, type Vsn } from './serializer.js';

/** A joined channel as the hub sees it: where to send a topic's broadcasts and presence diffs. */
export interface ChannelSink {
  /** Unique per joined channel (presence owner). */
  readonly id: string;
  readonly topic: string;
  readonly vsn: Vsn;
  readonly selfBroadcast: boolean;
  send(data: string | Buffer): void;
}

const BEAT_MS = 5_000;
/** A process not heard from for this long is gone: its presence entries are dropped. */
const NODE_TIMEOUT_MS = 15_000;

/**
 * Fan-out by topic within this process, and the bus to the others (docs/realtime.md). A broadcast
 * is encoded once per protocol version and the same bytes go to every local subscriber; no
 * database work happens on that path.
 */
export class RealtimeHub {
  private readonly topics = new Map<string, Set<ChannelSink>>();
  private readonly lastSeen = new Map<string, number>();
  readonly presence: PresenceTracker;
  /** Broadcasts handled since start: from this process's clients, and from other processes. */
  readonly counts = { local: 0, remote: 0 };
  private readonly beat: NodeJS.Timeout;

  constructor(private readonly bus: Bus, private readonly timing = { beatMs: BEAT_MS, nodeTimeoutMs: NODE_TIMEOUT_MS }) {
    this.presence = new PresenceTracker(bus.node, (message) => bus.publish(message), (topic, diff) => this.deliverDiff(topic, diff));
    bus.onMessage((node, message) => this.receive(node, message));
    bus.onReconnect(() => this.announce());
    this.announce();
    this.beat = setInterval(() => this.liveness(), timing.beatMs).unref();
  }

  join(sink: ChannelSink): void {
    const sinks = this.topics.get(sink.topic) ?? this.topics.set(sink.topic, new Set()).get(sink.topic)!;
    sinks.add(sink);
  }

  leave(sink: ChannelSink): void {
    this.presence.untrack(sink.id);
    const sinks = this.topics.get(sink.topic);
    if (!sinks) return;
    sinks.delete(sink);
    if (sinks.size === 0) this.topics.delete(sink.topic);
  }

  /** A member's broadcast: to this process's subscribers now (the sending channel only with `self`; null: sent over HTTP), then to the others. */
  broadcast(message: BroadcastMessage, from: ChannelSink | null): void {
    this.counts.local++;
    this.deliverBroadcast(message, from);
    this.bus.publish({ k: 'b', topic: message.topic, event: message.event, enc: message.encoding, data: message.encoding === 'json' ? message.bytes.toString('utf8') : message.bytes.toString('base64') });
  }

  /** Subscribers of a topic in this process. */
  subscribers(topic: string): number {
    return this.topics.get(topic)?.size ?? 0;
  }

  /** Tells the other processes this one's presence is gone (graceful shutdown). */
  async close(): Promise<void> {
    clearInterval(this.beat);
    this.bus.publish({ k: 'bye' });
    await this.bus.flush();
  }

  /**
   * After a start or a lost listening connection: ask the others for their presence (`hello`) and
   * tell them ours, since either side may have missed diffs while it was away. Whichever of two
   * processes listens again first, one of the two messages reaches the other.
   */
  private announce(): void {
    this.bus.publish({ k: 'hello' });
    const state = this.presence.localState();
    if (state.k === 'ps' && state.entries.length) this.bus.publish(state);
  }

  private deliverBroadcast(message: BroadcastMessage, from: ChannelSink | null): void {
    const sinks = this.topics.get(message.topic);
    if (!sinks) return;
    const encoded = new EncodedBroadcast(message);
    for (const sink of sinks) {
      if (sink === from && !sink.selfBroadcast) continue;
      const data = encoded.forVsn(sink.vsn);
      if (data !== null) sink.send(data);
    }
  }

  /**
   * A diff that both joins and leaves one key (a re-track, a process's state replacing what we
   * held) goes out as two: leaves first, then joins. supabase-js 2.109's presence adapter rewrites
   * `phx_ref` in place on the metas it passes to its join callback, so in a single diff the leave
   * would no longer find the old meta and the client would keep it forever.
   */
  private deliverDiff(topic: string, diff: PresenceDiff): void {
    const sinks = this.topics.get(topic);
    if (!sinks) return;
    const overlap = Object.keys(diff.joins).some((key) => key in diff.leaves);
    const diffs = overlap ? [{ joins: {}, leaves: diff.leaves }, { joins: diff.joins, leaves: {} }] : [diff];
    for (const part of diffs) {
      const byVsn = new Map<Vsn, string>();
      for (const sink of sinks) {
        let frame = byVsn.get(sink.vsn);
        if (frame === undefined) byVsn.set(sink.vsn, (frame = encodeFrame(sink.vsn, null, null, topic, 'presence_diff', part)));
        sink.send(frame);
      }
    }
  }

  private receive(node: string, message: BusMessage): void {
    this.lastSeen.set(node, Date.now());
    switch (message.k) {
      case 'b':
        this.counts.remote++;
        this.deliverBroadcast({ topic: message.topic, event: message.event, encoding: message.enc, bytes: Buffer.from(message.data, message.enc === 'json' ? 'utf8' : 'base64') }, null);
        return;
      case 'pd': case 'ps':
        this.presence.applyRemote(node, message);
        return;
      case 'hello': {
        const state = this.presence.localState();
        if (state.k === 'ps' && state.entries.length) this.bus.publish(state);
        return;
      }
      case 'bye':
        this.lastSeen.delete(node);
        this.presence.dropNode(node);
        return;
      case 'beat':
        return;
    }
  }

  private liveness(): void {
    this.bus.publish({ k: 'beat' });
    const now = Date.now();
    for (const node of this.presence.remoteNodes()) {
      if (now - (this.lastSeen.get(node) ?? 0) > this.timing.nodeTimeoutMs) {
        this.lastSeen.delete(node);
        this.presence.dropNode(node);
      }
    }
  }
}
