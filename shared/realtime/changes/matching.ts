import type { DataApiIdentity } from '../../data-api/identity.js';
import type { JoinedChannel } from '../channel.js';
import { bindingWantsEvent, rowPassesFilter, type ChangeBinding, type ChangeSubscriptions } from '../postgres-changes.js';
import type { ChangeType } from './capture.js';
import type { Reader } from './authorization-repository.js';

/** A channel a change concerns, with the ids of its bindings that match it. */
export interface Match {
  channel: JoinedChannel;
  ids: readonly number[];
}

/** The channels a change concerns: `plain` is shared by the batch's changes of the same relation and type. */
export interface Matched {
  plain: readonly Match[];
  filtered: readonly Match[];
}

type Unfiltered = { plain: Match[]; filtered: Array<{ channel: JoinedChannel; bindings: ChangeBinding[] }> };

/**
 * Matches one batch's changes to the bindings (the relation's bindings, then those of every
 * relation; `bindingWantsEvent`; `rowPassesFilter`), without allocating per subscriber and
 * change: a batch of 1,000 subscribers and a hundred changes made 100,000 such pairs. The channels whose matching bindings have no filter are listed
 * once per relation and type (the bindings a channel was registered with are its own, `bindings`);
 * only the filtered ones are tested per row.
 */
export class BatchMatcher {
  private readonly lists = new Map<string, Unfiltered>();

  constructor(private readonly subscriptions: ChangeSubscriptions<JoinedChannel>) {}

  match(relation: string, type: ChangeType, row: Record<string, unknown>): Matched {
    const list = this.listOf(relation, type);
    if (list.filtered.length === 0) return { plain: list.plain, filtered: [] };
    const filtered: Match[] = [];
    for (const { channel, bindings } of list.filtered) {
      const ids = bindings.filter((b) => rowPassesFilter(b, row)).map((b) => b.id);
      if (ids.length) filtered.push({ channel, ids });
    }
    return { plain: list.plain, filtered };
  }

  private listOf(relation: string, type: ChangeType): Unfiltered {
    const key = `${relation}|${type}`;
    let list = this.lists.get(key);
    if (list) return list;
    list = { plain: [], filtered: [] };
    for (const channel of this.subscriptions.subscribersOf(relation)) {
      const found = bindingsOf(channel, relation, type, key);
      if (!found) continue;
      if ('ids' in found) list.plain.push(found);
      else list.filtered.push(found);
    }
    this.lists.set(key, list);
    return list;
  }
}

/** Per channel and `relation|type`, its matching bindings (a channel's bindings never change): computed once. */
const perChannel = new WeakMap<JoinedChannel, Map<string, Match | { channel: JoinedChannel; bindings: ChangeBinding[] } | null>>();

function bindingsOf(channel: JoinedChannel, relation: string, type: ChangeType, key: string): Match | { channel: JoinedChannel; bindings: ChangeBinding[] } | null {
  let known = perChannel.get(channel);
  if (!known) perChannel.set(channel, (known = new Map()));
  let found = known.get(key);
  if (found === undefined) {
    const bindings = [...channel.bindings.filter((b) => b.table === relation), ...channel.bindings.filter((b) => b.table === null)]
      .filter((b) => bindingWantsEvent(b, type));
    found = bindings.length === 0 ? null : bindings.some((b) => b.filter) ? { channel, bindings } : { channel, ids: bindings.map((b) => b.id) };
    known.set(key, found);
  }
  return found;
}

const readers = new WeakMap<DataApiIdentity, { key: string; reader: Reader }>();

/** Who a channel reads as, and its key (`anon`, `u:<id>`); kept per identity (a token push replaces the identity). */
export function readerOf(channel: JoinedChannel): { key: string; reader: Reader } {
  let found = readers.get(channel.identity);
  if (!found) {
    const identity = channel.identity;
    found = identity.role === 'authenticated' ? { key: `u:${identity.userId}`, reader: { role: 'authenticated', sub: identity.userId } } : { key: 'anon', reader: { role: 'anon', sub: null } };
    readers.set(identity, found);
  }
  return found;
}
