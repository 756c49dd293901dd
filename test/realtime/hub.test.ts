import { describe, expect, it } from 'vitest';
import type { Bus, BusMessage } from '../../shared/realtime/bus.js';
import { RealtimeHub, type ChannelSink } from '../../shared/realtime/hub.js';
import { waitFor } from './clients.js';

/** Processes joined by an in-memory bus; `crash(i)` makes process i fall silent without a goodbye. */
function cluster(size: number) {
  const silent = new Set<number>();
  const handlers: Array<(node: string, message: BusMessage) => void> = [];
  const buses: Bus[] = Array.from({ length: size }, (_, i) => ({
    node: `node-${i}`,
    publish(message: BusMessage) {
      if (silent.has(i)) return;
      const text = JSON.stringify(message);
      handlers.forEach((handler, j) => { if (j !== i) queueMicrotask(() => handler(`node-${i}`, JSON.parse(text) as BusMessage)); });
    },
    onMessage(handler) { handlers[i] = handler; },
    onReconnect() {},
    async flush() {},
  }));
  const hubs: RealtimeHub[] = [];
  /** Starts process i (its hub says hello to the others, as at boot). */
  const start = (i: number) => (hubs[i] = new RealtimeHub(buses[i]!, { beatMs: 50, nodeTimeoutMs: 200 }));
  return { hubs, start, crash: (i: number) => silent.add(i) };
}

const sink = (id: string, topic: string, frames: Array<string | Buffer>): ChannelSink => ({ id, topic, vsn: '1.0.0', selfBroadcast: false, send: (data) => frames.push(data) });

// The hub's presence across processes, without PostgreSQL in between: what the LISTEN/NOTIFY bus
// carries (test/realtime/multi-process.test.ts runs it over the real database).
describe('realtime hub presence across processes', () => {
  it('a process that falls silent (crash, no goodbye) has its presence dropped after the timeout, with a leave diff', async () => {
    const { hubs, start, crash } = cluster(2);
    start(0); start(1);
    const frames: Array<string | Buffer> = [];
    const watcher = sink('watcher', 'realtime:team:t', frames);
    hubs[0]!.join(watcher);
    hubs[1]!.join(sink('tracked', 'realtime:team:t', []));
    hubs[1]!.presence.track('realtime:team:t', 'tracked', 'bob', { here: true });
    await waitFor(() => hubs[0]!.presence.state('realtime:team:t').bob, 'bob seen on process 0');
    crash(1);
    await waitFor(() => !hubs[0]!.presence.state('realtime:team:t').bob, 'bob dropped', 2_000);
    const diffs = frames.map((f) => JSON.parse(String(f)) as { event: string; payload: { joins: object; leaves: object } }).filter((f) => f.event === 'presence_diff');
    expect(diffs.map((d) => [Object.keys(d.payload.joins), Object.keys(d.payload.leaves)])).toEqual([[['bob'], []], [[], ['bob']]]);
    for (const hub of hubs) await hub.close();
  });

  it('a process that starts late asks for the others\' presence and gets it; re-tracking replaces the meta', async () => {
    const { hubs, start } = cluster(2);
    start(0);
    hubs[0]!.presence.track('realtime:team:t', 'c1', 'carol', { v: 1 });
    hubs[0]!.presence.track('realtime:team:t', 'c1', 'carol', { v: 2 });
    await new Promise((r) => setTimeout(r, 20));
    start(1);
    await waitFor(() => hubs[1]!.presence.state('realtime:team:t').carol, 'carol on the late process');
    expect(hubs[1]!.presence.state('realtime:team:t')).toEqual({ carol: { metas: [{ v: 2, phx_ref: expect.any(String), phx_ref_prev: expect.any(String) }] } });
    expect(hubs[1]!.presence.state('realtime:team:t')).toEqual(hubs[0]!.presence.state('realtime:team:t'));
    for (const hub of hubs) await hub.close();
  });
});
