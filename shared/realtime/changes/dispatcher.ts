import { LRUCache } from 'lru-cache';
import type { Database } from '../../db/client.js';
import type { JoinedChannel } from '../channel.js';
import type { ChangeSubscriptions } from '../postgres-changes.js';
import type { RealtimeRelation, RelationCatalog } from '../relations.js';
import { readableRows, tupleId, type Reader, type RowCheck } from './authorization-repository.js';
import type { CapturedTransaction, RowChange } from './capture.js';

/** Rows whose readers are remembered for their delete (process-wide, least recently used go first). */
const REMEMBERED_ROWS = 100_000;

interface Candidate {
  tx: CapturedTransaction;
  change: RowChange;
  relation: RealtimeRelation;
  channel: JoinedChannel;
  ids: number[];
  reader: string;
  rowId: string;
}

const readerKeyOf = (channel: JoinedChannel): string => (channel.identity.role === 'authenticated' ? `u:${channel.identity.userId}` : 'anon');
const readerOf = (key: string): Reader => (key === 'anon' ? { role: 'anon', sub: null } : { role: 'authenticated', sub: key.slice(2) });

/** A value as JSON carries it (dates as ISO strings), so filters and payloads agree. */
const plain = (row: Record<string, unknown>): Record<string, unknown> => JSON.parse(JSON.stringify(row)) as Record<string, unknown>;

/**
 * Turns captured transactions into `postgres_changes` events (docs/realtime.md "Row changes"):
 * match the bindings (relation, event, `eq` filter), ask PostgreSQL once per relation and distinct
 * reader (role + user: all the policies depend on) which of the batch's rows that reader may read,
 * then push in commit order. A delete cannot be checked (the row is gone): it goes to the readers
 * this process showed that row to before, and to nobody else.
 */
export class ChangeDispatcher {
  /** `relation|row` → readers shown it (for its delete). */
  private readonly shown = new LRUCache<string, Set<string>>({ max: REMEMBERED_ROWS });
  /** Statements run and events pushed, for the tests and metrics. */
  readonly counts = { checks: 0, events: 0 };

  constructor(
    private readonly db: Database,
    private readonly catalog: RelationCatalog,
    private readonly subscriptions: ChangeSubscriptions<JoinedChannel>,
  ) {}

  async dispatch(batch: readonly CapturedTransaction[]): Promise<void> {
    if (this.subscriptions.size === 0) return;
    const relations = await this.catalog.relations();
    const byBase = new Map<string, RealtimeRelation[]>();
    for (const relation of relations.values()) byBase.set(relation.base, [...(byBase.get(relation.base) ?? []), relation]);

    const candidates: Candidate[] = [];
    for (const tx of batch) {
      for (const table of tx.dropped) this.interruptTable(byBase.get(table) ?? [], 'Too many changes in one transaction to deliver; refetch');
      for (const change of tx.changes) {
        for (const relation of byBase.get(change.table) ?? []) {
          const row = plain((change.type === 'DELETE' ? change.oldKey : change.record) ?? {});
          const rowId = tupleId(relation.key.map((k) => row[k]));
          for (const { subscriber, ids } of this.subscriptions.match(relation.name, change.type, row)) {
            candidates.push({ tx, change, relation, channel: subscriber, ids, reader: readerKeyOf(subscriber), rowId });
          }
        }
      }
    }
    if (candidates.length === 0) return;

    // One check per relation and distinct reader, over every row of the batch it is owed.
    const groups = new Map<string, { relation: RealtimeRelation; reader: string; rows: Map<string, readonly string[]> }>();
    for (const c of candidates) {
      if (c.change.type === 'DELETE') continue;
      const groupKey = `${c.relation.name}|${c.reader}`;
      const group = groups.get(groupKey) ?? groups.set(groupKey, { relation: c.relation, reader: c.reader, rows: new Map() }).get(groupKey)!;
      group.rows.set(c.rowId, JSON.parse(c.rowId) as string[]);
    }
    const checks: RowCheck[] = [...groups.values()].map((g) => ({
      relation: g.relation.name,
      key: g.relation.key.map((name) => ({ name, type: g.relation.columns.find((c) => c.name === name)?.type ?? 'text' })),
      keys: [...g.rows.values()],
      reader: readerOf(g.reader),
    }));
    const answers = await readableRows(this.db, checks, [...new Set(candidates.map((c) => c.tx.xid))]);
    this.counts.checks += checks.length;
    const readable = new Map([...groups.keys()].map((key, i) => [key, answers[i]!]));

    for (const c of candidates) {
      const memory = `${c.relation.name}|${c.rowId}`;
      let allowed: boolean;
      if (c.change.type === 'DELETE') {
        allowed = this.shown.get(memory)?.has(c.reader) ?? false;
      } else {
        allowed = readable.get(`${c.relation.name}|${c.reader}`)!.has(c.rowId);
        const readers = this.shown.get(memory) ?? new Set<string>();
        if (allowed) readers.add(c.reader);
        else readers.delete(c.reader);
        if (readers.size) this.shown.set(memory, readers);
        else this.shown.delete(memory);
      }
      if (!allowed || !this.subscriptions.has(c.channel)) continue;
      c.channel.push('postgres_changes', { ids: c.ids, data: this.payload(c) });
      this.counts.events++;
    }
    for (const c of candidates) if (c.change.type === 'DELETE') this.shown.delete(`${c.relation.name}|${c.rowId}`);
  }

  /** The event's `data`, in the platform's shape; only the columns the relation shows its readers. */
  private payload(c: Candidate): Record<string, unknown> {
    const pick = (row: Record<string, unknown> | null, names: readonly string[]) => {
      const source = plain(row ?? {});
      return Object.fromEntries(names.filter((n) => n in source).map((n) => [n, source[n]]));
    };
    const names = c.relation.columns.map((col) => col.name);
    return {
      schema: 'public',
      table: c.relation.name,
      commit_timestamp: c.tx.commitTimestamp,
      type: c.change.type,
      columns: c.relation.columns.map((col) => ({ name: col.name, type: col.type })),
      record: c.change.type === 'DELETE' ? {} : pick(c.change.record, names),
      old_record: c.change.type === 'INSERT' ? {} : pick(c.change.oldKey, c.relation.key),
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
