import { LRUCache } from 'lru-cache';
import type { Database } from '../../db/client.js';
import type { JoinedChannel } from '../channel.js';
import type { ChangeSubscriptions } from '../postgres-changes.js';
import type { RealtimeRelation, RelationCatalog } from '../relations.js';
import { AuthorizationConnection } from './authorization-connection.js';
import { authorizeBatch, hasValues, primeValues, tupleId, type Reader, type RelationCheck } from './authorization-repository.js';
import type { CapturedTransaction, RowChange } from './capture.js';
import { encodeChangeFrame } from './frames.js';
import { BatchMatcher, readerOf, type Match, type Matched } from './matching.js';
import { RelationPolicies } from './policies.js';
import type { ReaderFunction } from './reader-dependence.js';
import { ReaderValueCache } from './reader-values.js';

/** Rows whose readers are remembered for their delete (process-wide, least recently used go first). */
const REMEMBERED_ROWS = 100_000;
/** How long after a join the readers' values are computed (a burst of joins is primed at once). */
const PRIME_AFTER_MS = 50;

/** Where a batch's time went (ms), for whoever observes (the realtime bench's timing log). */
export interface BatchTiming {
  transactions: number;
  /** (change, channel) pairs matched. */
  candidates: number;
  checks: number;
  /** Readers' values of reader functions computed (not kept from an earlier batch). */
  computedValues: number;
  /** Snapshots taken until one saw the batch (1 = at once). */
  snapshots: number;
  /** From the first transaction's commit to the start of its dispatch. */
  waitedMs: number;
  matchMs: number;
  authorizeMs: number;
  pushMs: number;
  events: number;
}

let observer: ((timing: BatchTiming) => void) | null = null;
/** Calls `observe` after every batch of every dispatcher of this process (null: stop). */
export function observeBatches(observe: ((timing: BatchTiming) => void) | null): void {
  observer = observe;
}

/** One change of one relation and the channels its bindings match. */
interface Delivery {
  tx: CapturedTransaction;
  change: RowChange;
  relation: RealtimeRelation;
  row: Record<string, unknown>;
  rowId: string;
  matched: Matched;
}

/** What one relation's check covers in a batch: its rows, its readers (and the shared lists already read for them). */
interface RelationRows {
  relation: RealtimeRelation;
  rows: Map<string, readonly string[]>;
  readers: Map<string, Reader>;
  lists: Set<readonly Match[]>;
}

/** A value as JSON carries it (dates as ISO strings), so filters and payloads agree. */
const plain = (row: Record<string, unknown>): Record<string, unknown> => JSON.parse(JSON.stringify(row)) as Record<string, unknown>;

/**
 * Turns captured transactions into `postgres_changes` events (docs/realtime.md "Row changes"):
 * match the bindings (relation, event, `eq` filter), ask PostgreSQL once per relation and group of
 * readers one check answers (./reader-dependence.ts) which of the batch's rows they may read, then
 * push in commit order. A delete cannot be checked (the row is gone): it goes to the readers this
 * process showed that row to before, and to nobody else.
 */
export class ChangeDispatcher {
  /** `relation|row` → readers shown it (for its delete). */
  private readonly shown = new LRUCache<string, Set<string>>({ max: REMEMBERED_ROWS });
  private readonly policies: RelationPolicies;
  private readonly values = new ReaderValueCache();
  private readonly connection: AuthorizationConnection;
  private priming: NodeJS.Timeout | null = null;
  /** Counts closes: a priming that began before one does not open the connection again. */
  private closes = 0;
  /** Check statements run and events pushed, for the tests and metrics. */
  readonly counts = { checks: 0, events: 0 };

  constructor(
    db: Database,
    private readonly catalog: RelationCatalog,
    private readonly subscriptions: ChangeSubscriptions<JoinedChannel>,
  ) {
    this.policies = new RelationPolicies(db);
    this.connection = new AuthorizationConnection(db);
  }

  /**
   * Channels joined: soon (joins come in bursts) the analysis is loaded, the connection opened and
   * the subscribed readers' values not kept yet are computed, so that the first batch after the
   * joins does not pay for them. Best effort: a batch computes whatever is missing.
   */
  prime(): void {
    this.priming ??= setTimeout(() => {
      this.priming = null;
      void this.primeNow().catch(() => {});
    }, PRIME_AFTER_MS);
    this.priming.unref();
  }

  /** The capture stopped: the connection is closed (a process with no subscriber holds none). */
  async close(): Promise<void> {
    if (this.priming) clearTimeout(this.priming);
    this.priming = null;
    this.closes++;
    await this.connection.close();
  }

  async dispatch(batch: readonly CapturedTransaction[]): Promise<void> {
    if (this.subscriptions.size === 0) return;
    const started = performance.now();
    const { deliveries, toCheck, candidates } = await this.match(batch);
    if (deliveries.length === 0) return;
    const matchedAt = performance.now();

    // Authorize: one check per relation and group of readers, all in two round trips.
    const { analysis, stamp } = await this.policies.current();
    const checks: RelationCheck[] = [...toCheck.values()].map(({ relation, rows, readers }) => ({
      relation: relation.name,
      key: relation.key.map((name) => ({ name, type: relation.columns.find((c) => c.name === name)?.type ?? 'text' })),
      keys: [...rows.values()],
      readers,
      dependence: analysis.dependence.get(relation.name) ?? { kind: 'reader', why: 'not analyzed' },
    }));
    const xids = [...new Set(batch.map((tx) => tx.xid))];
    const authorization = await this.connection.use((client) => authorizeBatch(client, checks, xids, { stamp, values: this.values }));
    if (authorization.stale) this.policies.invalidate();
    this.counts.checks += authorization.checks;
    const authorizedAt = performance.now();

    // Push, in commit order.
    let events = 0;
    for (const d of deliveries) {
      const memory = `${d.relation.name}|${d.rowId}`;
      const deleted = d.change.type === 'DELETE';
      const shownBefore = this.shown.get(memory);
      const answers = authorization.readable(d.relation.name);
      const allowed = new Set<string>();
      let data: string | null = null;
      for (const list of [d.matched.plain, d.matched.filtered]) {
        for (const { channel, ids } of list) {
          const { key } = readerOf(channel);
          if (!(deleted ? shownBefore?.has(key) : answers.get(key)?.has(d.rowId))) continue;
          allowed.add(key);
          if (!this.subscriptions.has(channel)) continue;
          data ??= JSON.stringify(this.payload(d));
          channel.send(encodeChangeFrame(channel.vsn, channel.joinRef, channel.topic, ids, data));
          events++;
        }
      }
      if (deleted) this.shown.delete(memory);
      else this.remember(memory, d.matched, allowed, shownBefore);
    }
    this.counts.events += events;
    observer?.({
      transactions: batch.length, candidates, checks: authorization.checks, computedValues: authorization.computedValues, snapshots: authorization.snapshots, events,
      waitedMs: Date.now() - Date.parse(batch[0]!.commitTimestamp) - (performance.now() - started),
      matchMs: matchedAt - started, authorizeMs: authorizedAt - matchedAt, pushMs: performance.now() - authorizedAt,
    });
  }

  /** Per change and relation, the channels concerned; per relation, the rows and readers to check. */
  private async match(batch: readonly CapturedTransaction[]): Promise<{ deliveries: Delivery[]; toCheck: Map<string, RelationRows>; candidates: number }> {
    const byBase = new Map<string, RealtimeRelation[]>();
    for (const relation of (await this.catalog.relations()).values()) byBase.set(relation.base, [...(byBase.get(relation.base) ?? []), relation]);
    const matcher = new BatchMatcher(this.subscriptions);
    const deliveries: Delivery[] = [];
    const toCheck = new Map<string, RelationRows>();
    let candidates = 0;
    for (const tx of batch) {
      for (const table of tx.dropped) this.interruptTable(byBase.get(table) ?? [], 'Too many changes in one transaction to deliver; refetch');
      for (const change of tx.changes) {
        const bases = byBase.get(change.table);
        if (!bases) continue;
        const row = plain((change.type === 'DELETE' ? change.oldKey : change.record) ?? {});
        for (const relation of bases) {
          const matched = matcher.match(relation.name, change.type, row);
          if (matched.plain.length + matched.filtered.length === 0) continue;
          candidates += matched.plain.length + matched.filtered.length;
          const rowId = tupleId(relation.key.map((k) => row[k]));
          deliveries.push({ tx, change, relation, row, rowId, matched });
          if (change.type === 'DELETE') continue;
          const entry = toCheck.get(relation.name) ?? toCheck.set(relation.name, { relation, rows: new Map(), readers: new Map(), lists: new Set() }).get(relation.name)!;
          entry.rows.set(rowId, JSON.parse(rowId) as string[]);
          // The readers of a shared list once per batch, those of the filtered bindings per change.
          for (const list of entry.lists.has(matched.plain) ? [matched.filtered] : [matched.plain, matched.filtered]) {
            for (const { channel } of list) {
              const { key, reader } = readerOf(channel);
              if (!entry.readers.has(key)) entry.readers.set(key, reader);
            }
          }
          entry.lists.add(matched.plain);
        }
      }
    }
    return { deliveries, toCheck, candidates };
  }

  /**
   * The readers shown a row after an INSERT or UPDATE: those it was allowed to now, and those shown
   * it before whom this change did not concern (their bindings did not match it).
   */
  private remember(memory: string, matched: Matched, allowed: Set<string>, before: ReadonlySet<string> | undefined): void {
    if (before?.size) {
      const concerned = new Set<string>();
      for (const list of [matched.plain, matched.filtered]) for (const { channel } of list) concerned.add(readerOf(channel).key);
      for (const reader of before) if (!concerned.has(reader)) allowed.add(reader);
    }
    if (allowed.size) this.shown.set(memory, allowed);
    else this.shown.delete(memory);
  }

  private async primeNow(): Promise<void> {
    const closes = this.closes;
    const [{ analysis, stamp }, relations] = await Promise.all([this.policies.current(), this.catalog.relations()]);
    const functions = new Map<number, ReaderFunction>();
    const subs = new Set<string>();
    for (const channel of this.subscriptions.all()) {
      const { reader } = readerOf(channel);
      if (!hasValues(reader)) continue;
      const names = channel.bindings.some((b) => b.table === null) ? [...relations.keys()] : channel.bindings.map((b) => b.table!);
      for (const name of names) {
        const dependence = analysis.dependence.get(name);
        if (dependence?.kind !== 'functions') continue;
        for (const f of dependence.functions) if (f.cacheable) functions.set(f.oid, f);
        if (dependence.functions.length) subs.add(reader.sub!);
      }
    }
    if (functions.size === 0 || subs.size < 2 || closes !== this.closes) return;
    await this.connection.use((client) => primeValues(client, [...functions.values()], [...subs], { stamp, values: this.values }));
  }

  /** The event's `data`, in the platform's shape; only the columns the relation shows its readers. */
  private payload(d: Delivery): Record<string, unknown> {
    const pick = (source: Record<string, unknown>, names: readonly string[]) => Object.fromEntries(names.filter((n) => n in source).map((n) => [n, source[n]]));
    return {
      schema: 'public',
      table: d.relation.name,
      commit_timestamp: d.tx.commitTimestamp,
      type: d.change.type,
      columns: d.relation.columns.map((col) => ({ name: col.name, type: col.type })),
      record: d.change.type === 'DELETE' ? {} : pick(d.row, d.relation.columns.map((col) => col.name)),
      old_record: d.change.type === 'INSERT' ? {} : pick(plain(d.change.oldKey ?? {}), d.relation.key),
      errors: null,
    };
  }

  /** Subscribers of these relations missed changes: their channels are errored, they rejoin and refetch. */
  private interruptTable(relations: readonly RealtimeRelation[], reason: string): void {
    for (const relation of relations) {
      for (const channel of this.subscriptions.subscribersOf(relation.name)) channel.interrupt(reason);
    }
  }
}
