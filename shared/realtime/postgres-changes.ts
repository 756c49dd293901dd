import { isUuid } from '../ids.js';
import type { ColumnType, RelationColumns } from './relations.js';

// The `postgres_changes` part of a join (docs/realtime.md "Row changes"): the bindings a client
// asks for are validated here and echoed in the join reply in the same order, each with an id the
// server assigns (supabase-js refuses the channel on any mismatch). The registry below is what the
// change capture (./changes/) looks subscribers up in.

export type ChangeEvent = '*' | 'INSERT' | 'UPDATE' | 'DELETE';

export interface ChangeBinding {
  id: number;
  event: ChangeEvent;
  /** null = every realtime relation. */
  table: string | null;
  filter: { column: string; value: string } | null;
  /** What the client sent, echoed with `id` in the join reply. */
  requested: Record<string, unknown>;
}

export class BindingError extends Error {}

let lastId = 0;
const nextId = () => (lastId = (lastId % 2_000_000_000) + 1);

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
const EVENTS: readonly ChangeEvent[] = ['*', 'INSERT', 'UPDATE', 'DELETE'];

function valueFits(type: ColumnType, value: string): boolean {
  switch (type) {
    case 'uuid': return isUuid(value);
    case 'integer': return /^-?\d{1,19}$/.test(value);
    case 'number': return /^-?\d+(\.\d+)?$/.test(value);
    case 'boolean': return value === 'true' || value === 'false';
    case 'text': return true;
  }
}

/**
 * `column=eq.value`, the only filter this server takes (CONTRACTS: `eq` on any column). The value
 * is a literal compared with the row's value, never SQL; it must fit the column's type.
 */
function parseFilter(filter: string, table: string, columns: ReadonlyMap<string, ColumnType>): { column: string; value: string } {
  const match = /^([^=]*)=([a-z]+)\.([\s\S]*)$/.exec(filter);
  if (!match) throw new BindingError(`InvalidFilter: expected column=eq.value, got "${filter}"`);
  const [, column, operator, value] = match as unknown as [string, string, string, string];
  if (operator !== 'eq') throw new BindingError(`InvalidFilter: only the eq operator is supported, got "${operator}" in "${filter}"`);
  if (!IDENTIFIER.test(column) || !columns.has(column)) throw new BindingError(`InvalidFilter: column "${column}" does not exist on relation ${table}`);
  if (!valueFits(columns.get(column)!, value)) throw new BindingError(`InvalidFilter: "${value}" is not a valid ${columns.get(column)} for column "${column}" of ${table}`);
  return { column, value };
}

/** Validates a join's `config.postgres_changes`; throws BindingError naming the first bad binding. */
export function validateBindings(raw: unknown, catalog: RelationColumns): ChangeBinding[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw new BindingError('InvalidJoinPayload: config.postgres_changes must be a list');
  return raw.filter((entry) => entry !== null).map((entry: unknown) => {
    if (typeof entry !== 'object' || Array.isArray(entry)) throw new BindingError('InvalidJoinPayload: each postgres_changes binding is an object');
    const requested = entry as Record<string, unknown>;
    const { event, schema, table, filter } = requested;
    const upper = typeof event === 'string' ? event.toUpperCase() : event;
    if (!EVENTS.includes(upper as ChangeEvent)) throw new BindingError(`InvalidJoinPayload: event must be one of *, INSERT, UPDATE, DELETE, got ${JSON.stringify(event)}`);
    if (schema !== 'public' && schema !== '*') throw new BindingError(`InvalidJoinPayload: schema ${JSON.stringify(schema)} is not available (relations live in "public")`);
    const anyTable = table === undefined || table === null || table === '*';
    if (!anyTable && (typeof table !== 'string' || !catalog.has(table))) throw new BindingError(`InvalidJoinPayload: relation ${JSON.stringify(table)} is not available to realtime`);
    if (filter !== undefined && filter !== null && typeof filter !== 'string') throw new BindingError('InvalidFilter: filter must be a string');
    let parsed: ChangeBinding['filter'] = null;
    if (typeof filter === 'string' && filter !== '') {
      if (anyTable) throw new BindingError('InvalidFilter: a filter needs a table');
      parsed = parseFilter(filter, table as string, catalog.get(table as string)!);
    }
    return { id: nextId(), event: upper as ChangeEvent, table: anyTable ? null : (table as string), filter: parsed, requested };
  });
}

/** The join reply's `postgres_changes`: each requested binding as sent, plus its id. */
export const echoBindings = (bindings: readonly ChangeBinding[]) => bindings.map((b) => ({ ...b.requested, id: b.id }));

/** Does a binding ask for this kind of change (its event, `*` for any)? */
export const bindingWantsEvent = (binding: ChangeBinding, type: Exclude<ChangeEvent, '*'>) => binding.event === '*' || binding.event === type;

/** Does a row pass a binding's `eq` filter (compared as the row's JSON carries the value)? */
export const rowPassesFilter = (binding: ChangeBinding, row: Record<string, unknown>) => !binding.filter || String(row[binding.filter.column] ?? '') === binding.filter.value;

/** Who listens to which relation, for the change capture to fan out by relation. */
export class ChangeSubscriptions<Subscriber> {
  private readonly byTable = new Map<string | null, Map<Subscriber, ChangeBinding[]>>();

  add(subscriber: Subscriber, bindings: readonly ChangeBinding[]): void {
    for (const binding of bindings) {
      const subscribers = this.byTable.get(binding.table) ?? new Map<Subscriber, ChangeBinding[]>();
      subscribers.set(subscriber, [...(subscribers.get(subscriber) ?? []), binding]);
      this.byTable.set(binding.table, subscribers);
    }
  }

  remove(subscriber: Subscriber): void {
    for (const [table, subscribers] of this.byTable) {
      subscribers.delete(subscriber);
      if (subscribers.size === 0) this.byTable.delete(table);
    }
  }

  has(subscriber: Subscriber): boolean {
    for (const subscribers of this.byTable.values()) if (subscribers.has(subscriber)) return true;
    return false;
  }

  /** Subscribers to a relation's changes (those of every relation included). */
  subscribersOf(table: string): Subscriber[] {
    return [...new Set([...(this.byTable.get(table)?.keys() ?? []), ...(this.byTable.get(null)?.keys() ?? [])])];
  }

  /** Every subscriber. */
  all(): Subscriber[] {
    const found = new Set<Subscriber>();
    for (const subscribers of this.byTable.values()) for (const subscriber of subscribers.keys()) found.add(subscriber);
    return [...found];
  }

  get size(): number {
    let n = 0;
    for (const subscribers of this.byTable.values()) n += subscribers.size;
    return n;
  }
}
