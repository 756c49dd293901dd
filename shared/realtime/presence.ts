import { randomUUID } from 'node:crypto';

// Presence across API processes (docs/realtime.md "More than one API process"): every process
// keeps the whole presence of every topic, the entries it tracks itself ("local", owned by one
// channel) and the ones the other processes told it about. Each change travels as a diff on the
// bus; a process that (re)connects asks the others for their entries, and a process that stops
// saying it is alive has its entries dropped, so a crashed process leaves no ghost.

export type Meta = Record<string, unknown> & { phx_ref: string };
export interface PresenceEntry { ref: string; key: string; meta: Meta; node: string; owner: string | null }
export type PresenceState = Record<string, { metas: Meta[] }>;
export interface PresenceDiff { joins: PresenceState; leaves: PresenceState }

/** What the tracker says on the bus. */
export type PresenceBusMessage =
  | { k: 'pd'; topic: string; joins: Array<Omit<PresenceEntry, 'owner' | 'node'>>; leaves: string[] }
  | { k: 'ps'; entries: Array<{ topic: string; ref: string; key: string; meta: Meta }> };

const group = (entries: Iterable<{ key: string; meta: Meta }>): PresenceState => {
  const state: PresenceState = {};
  for (const { key, meta } of entries) (state[key] ??= { metas: [] }).metas.push(meta);
  return state;
};

export class PresenceTracker {
  private readonly byTopic = new Map<string, Map<string, PresenceEntry>>();
  /** The ref each local owner (channel) tracks under, per topic: a channel tracks at most one entry. */
  private readonly byOwner = new Map<string, { topic: string; ref: string }>();

  constructor(
    readonly node: string,
    private readonly publish: (message: PresenceBusMessage) => void,
    private readonly onDiff: (topic: string, diff: PresenceDiff) => void,
  ) {}

  state(topic: string): PresenceState {
    return group(this.byTopic.get(topic)?.values() ?? []);
  }

  /** Tracks (or re-tracks, replacing the previous meta) the channel `owner`'s presence on `topic`. */
  track(topic: string, owner: string, key: string, payload: Record<string, unknown>): void {
    const previous = this.byOwner.get(owner);
    const ref = randomUUID();
    const meta: Meta = { ...payload, phx_ref: ref };
    if (previous) meta.phx_ref_prev = previous.ref;
    const leaves = previous ? this.remove(topic, [previous.ref]) : [];
    this.entries(topic).set(ref, { ref, key, meta, node: this.node, owner });
    this.byOwner.set(owner, { topic, ref });
    this.onDiff(topic, { joins: group([{ key, meta }]), leaves: group(leaves) });
    this.publish({ k: 'pd', topic, joins: [{ ref, key, meta }], leaves: previous ? [previous.ref] : [] });
  }

  /** Removes the channel's entry (untrack, leave, socket closed); nothing when it tracks none. */
  untrack(owner: string): void {
    const tracked = this.byOwner.get(owner);
    if (!tracked) return;
    this.byOwner.delete(owner);
    const leaves = this.remove(tracked.topic, [tracked.ref]);
    if (leaves.length) this.onDiff(tracked.topic, { joins: {}, leaves: group(leaves) });
    this.publish({ k: 'pd', topic: tracked.topic, joins: [], leaves: [tracked.ref] });
  }

  /** A diff from another process. */
  applyRemote(node: string, message: PresenceBusMessage): void {
    if (message.k === 'pd') {
      const leaves = this.remove(message.topic, message.leaves);
      const entries = this.entries(message.topic);
      for (const join of message.joins) entries.set(join.ref, { ...join, node, owner: null });
      this.onDiff(message.topic, { joins: group(message.joins), leaves: group(leaves) });
      return;
    }
    // The full set of another process's entries: replace what we hold of it (joins and leaves only for the difference).
    const incoming = new Map(message.entries.map((e) => [e.ref, e]));
    const changes = new Map<string, PresenceDiff>();
    const diffOf = (topic: string) => changes.get(topic) ?? changes.set(topic, { joins: {}, leaves: {} }).get(topic)!;
    for (const [topic, entries] of this.byTopic) {
      for (const entry of entries.values()) {
        if (entry.node !== node || incoming.has(entry.ref)) continue;
        entries.delete(entry.ref);
        (diffOf(topic).leaves[entry.key] ??= { metas: [] }).metas.push(entry.meta);
      }
    }
    for (const e of message.entries) {
      const entries = this.entries(e.topic);
      if (entries.has(e.ref)) continue;
      entries.set(e.ref, { ref: e.ref, key: e.key, meta: e.meta, node, owner: null });
      (diffOf(e.topic).joins[e.key] ??= { metas: [] }).metas.push(e.meta);
    }
    for (const [topic, diff] of changes) this.onDiff(topic, diff);
    this.prune();
  }

  /** Every entry of a process that left (or stopped beating) goes, each topic with one diff. */
  dropNode(node: string): void {
    this.applyRemote(node, { k: 'ps', entries: [] });
  }

  /** This process's own entries, as a full-state message for a process that asked. */
  localState(): PresenceBusMessage {
    const entries: Array<{ topic: string; ref: string; key: string; meta: Meta }> = [];
    for (const [topic, map] of this.byTopic) {
      for (const e of map.values()) if (e.node === this.node) entries.push({ topic, ref: e.ref, key: e.key, meta: e.meta });
    }
    return { k: 'ps', entries };
  }

  /** Nodes that hold entries here (for the liveness check). */
  remoteNodes(): Set<string> {
    const nodes = new Set<string>();
    for (const map of this.byTopic.values()) for (const e of map.values()) if (e.node !== this.node) nodes.add(e.node);
    return nodes;
  }

  private entries(topic: string): Map<string, PresenceEntry> {
    return this.byTopic.get(topic) ?? this.byTopic.set(topic, new Map()).get(topic)!;
  }

  private remove(topic: string, refs: readonly string[]): PresenceEntry[] {
    const entries = this.byTopic.get(topic);
    if (!entries) return [];
    const removed: PresenceEntry[] = [];
    for (const ref of refs) {
      const entry = entries.get(ref);
      if (entry) { entries.delete(ref); removed.push(entry); }
    }
    if (entries.size === 0) this.byTopic.delete(topic);
    return removed;
  }

  private prune(): void {
    for (const [topic, entries] of this.byTopic) if (entries.size === 0) this.byTopic.delete(topic);
  }
}
