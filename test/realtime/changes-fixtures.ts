import { ChangeCapture, type CapturedTransaction } from '../../shared/realtime/changes/capture.js';
import { JoinedChannel } from '../../shared/realtime/channel.js';
import { ChangeSubscriptions, validateBindings } from '../../shared/realtime/postgres-changes.js';
import type { RelationCatalog } from '../../shared/realtime/relations.js';
import type { TestStack } from '../harness/stack.js';
import { until } from '../harness/until.js';

// What the change-capture tests below the websocket share: channels registered as a socket
// registers them (their frames kept), and a capture whose transactions a test dispatches itself.

type ChangeFrame = { payload: { data: { table: string; type: string; record: Record<string, unknown>; old_record: Record<string, unknown> } } };

export function channelsOn(catalog: RelationCatalog) {
  const subscriptions = new ChangeSubscriptions<JoinedChannel>();
  const frames = new Map<JoinedChannel, ChangeFrame[]>();
  return {
    subscriptions,
    /** A channel of `userId` (null: anon) with one binding on `table`, registered. */
    async channel(userId: string | null, table: string) {
      const bindings = validateBindings([{ event: '*', schema: 'public', table }], await catalog.columns());
      const identity = userId ? { role: 'authenticated' as const, userId, claims: { sub: userId } } : { role: 'anon' as const };
      const received: ChangeFrame[] = [];
      const channel = new JoinedChannel('realtime:t', 't', '1', '1.0.0', null, { selfBroadcast: false, ack: false, presenceKey: 'k', presenceEnabled: false }, bindings, identity as never, null, (data) => received.push(JSON.parse(String(data)) as ChangeFrame));
      subscriptions.add(channel, bindings);
      frames.set(channel, received);
      return channel;
    },
    /** The records of `table` a channel was sent, in order, as `field` of each. */
    seen(channel: JoinedChannel, table: string, field = 'id') {
      return frames.get(channel)!.filter((f) => f.payload.data.table === table).map((f) => f.payload.data.record[field]);
    },
  };
}

/** A capture of the test's database whose committed transactions wait in `take` for the test to dispatch. */
export async function startCapture(stack: TestStack) {
  const pending: CapturedTransaction[] = [];
  const capture = new ChangeCapture(stack.databaseUrl, async (txs) => { pending.push(...txs); }, () => {});
  await capture.ready;
  return {
    capture,
    /** The transactions captured so far, once `count` of them touched `table`. */
    async take(count: number, table: string): Promise<CapturedTransaction[]> {
      await until(async () => pending.filter((tx) => tx.changes.some((c) => c.table === table)).length >= count, 10_000, `${count} transactions on ${table} captured`, 20);
      return pending.splice(0);
    },
  };
}
