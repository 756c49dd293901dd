import { randomUUID } from 'node:crypto';
import type { Database } from '../db/client.js';
import type { PgListener } from '../db/listener.js';
import { notifyAll } from './bus-repository.js';
import type { PresenceBusMessage } from './presence.js';

// The cross-process bus of realtime (docs/realtime.md "More than one API process"): PostgreSQL
// LISTEN/NOTIFY on the service's own database, so two or more API processes behind one address
// share broadcasts and presence with nothing else to run. Each process delivers to its own
// sockets first (no database on that path) and publishes for the others; it ignores what it
// published itself, so a subscriber gets each message once.

export type BroadcastBusMessage = { k: 'b'; topic: string; event: string; enc: 'json' | 'binary'; data: string };
export type BusMessage = PresenceBusMessage | BroadcastBusMessage | { k: 'hello' } | { k: 'beat' } | { k: 'bye' };

export interface Bus {
  readonly node: string;
  publish(message: BusMessage): void;
  onMessage(handler: (node: string, message: BusMessage) => void): void;
  /** Called when messages may have been missed (the listening connection came back). */
  onReconnect(handler: () => void): void;
  /** Sends what is queued. */
  flush(): Promise<void>;
}

export const BUS_CHANNEL = 'realtime_bus';
/** NOTIFY payloads must stay under 8000 bytes: bigger messages travel as base64 chunks of this many bytes. */
const CHUNK_BYTES = 5_000;
const SINGLE_MAX_BYTES = 7_800;
/** A message whose chunks did not all arrive within this time is dropped. */
const REASSEMBLY_TIMEOUT_MS = 10_000;
/** Messages waiting for the database at most; beyond it the oldest are dropped (the bus is best effort while PostgreSQL is away). */
const MAX_QUEUED = 20_000;

/**
 * Wire format of one NOTIFY payload: `node|messageId|index|count|body`; a single-chunk body is the
 * JSON text, a chunk of a larger message is base64 of its slice of the UTF-8 bytes.
 */
export class PgBus implements Bus {
  readonly node = randomUUID();
  private readonly handlers: Array<(node: string, message: BusMessage) => void> = [];
  private readonly reconnectHandlers: Array<() => void> = [];
  private readonly partial = new Map<string, { parts: string[]; received: number; at: number }>();
  private queue: string[] = [];
  private flushing: Promise<void> | null = null;
  private scheduled = false;
  private sequence = 0;
  private failures = { dropped: 0, reportedAt: 0 };
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly db: Database, listener: PgListener, private readonly log: (message: string) => void = () => {}) {
    listener.on(BUS_CHANNEL, (payload) => this.receive(payload));
    listener.onReconnect(() => { for (const handler of this.reconnectHandlers) handler(); });
    this.sweeper = setInterval(() => this.sweep(), REASSEMBLY_TIMEOUT_MS).unref();
  }

  publish(message: BusMessage): void {
    const text = JSON.stringify(message);
    const id = (this.sequence = (this.sequence + 1) % 1e9).toString(36);
    const bytes = Buffer.from(text, 'utf8');
    if (bytes.length <= SINGLE_MAX_BYTES) {
      this.enqueue([`${this.node}|${id}|0|1|${text}`]);
    } else {
      const count = Math.ceil(bytes.length / CHUNK_BYTES);
      const chunks: string[] = [];
      for (let i = 0; i < count; i++) chunks.push(`${this.node}|${id}|${i}|${count}|${bytes.subarray(i * CHUNK_BYTES, (i + 1) * CHUNK_BYTES).toString('base64')}`);
      this.enqueue(chunks);
    }
  }

  onMessage(handler: (node: string, message: BusMessage) => void): void {
    this.handlers.push(handler);
  }

  onReconnect(handler: () => void): void {
    this.reconnectHandlers.push(handler);
  }

  async flush(): Promise<void> {
    while (this.flushing || this.queue.length) {
      if (this.flushing) await this.flushing;
      else this.startFlush();
    }
  }

  close(): void {
    clearInterval(this.sweeper);
  }

  /** Everything published in one tick goes in one statement: many broadcasts, one round trip. */
  private enqueue(payloads: string[]): void {
    this.queue.push(...payloads);
    if (this.queue.length > MAX_QUEUED) {
      this.log(`realtime bus: ${this.queue.length - MAX_QUEUED} messages dropped while the database is slow or away`);
      this.queue.splice(0, this.queue.length - MAX_QUEUED);
    }
    if (!this.scheduled && !this.flushing) {
      this.scheduled = true;
      setImmediate(() => { this.scheduled = false; if (!this.flushing) this.startFlush(); });
    }
  }

  private startFlush(): void {
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 0) return;
    this.flushing = notifyAll(this.db, BUS_CHANNEL, batch)
      .catch((error: Error) => this.publishFailed(batch.length, error))
      .finally(() => {
        this.flushing = null;
        if (this.queue.length) this.startFlush();
      });
  }

  /**
   * A publish that failed (PostgreSQL away): its payloads are dropped, and the loss is reported at
   * most every 10 s, summed, so an outage (already reported by whoever first needs the database)
   * does not flood the log with one line per beat.
   */
  private publishFailed(count: number, error: Error): void {
    this.failures.dropped += count;
    const now = Date.now();
    if (now - this.failures.reportedAt < 10_000) return;
    this.log(`realtime bus: publishing failed, ${this.failures.dropped} payloads dropped: ${error.message}`);
    this.failures = { dropped: 0, reportedAt: now };
  }

  private receive(payload: string): void {
    const fields = payload.split('|', 4);
    if (fields.length < 4) return;
    const [node, id, indexText, countText] = fields as [string, string, string, string];
    if (node === this.node) return;
    const body = payload.slice(node.length + id.length + indexText.length + countText.length + 4);
    const count = Number(countText);
    let text: string;
    if (count === 1) {
      text = body;
    } else {
      const key = `${node}|${id}`;
      const entry = this.partial.get(key) ?? { parts: new Array<string>(count), received: 0, at: Date.now() };
      this.partial.set(key, entry);
      const index = Number(indexText);
      if (entry.parts[index] === undefined) { entry.parts[index] = body; entry.received++; }
      if (entry.received < count) return;
      this.partial.delete(key);
      text = Buffer.concat(entry.parts.map((part) => Buffer.from(part, 'base64'))).toString('utf8');
    }
    let message: BusMessage;
    try {
      message = JSON.parse(text) as BusMessage;
    } catch {
      this.log('realtime bus: a message that is not JSON was ignored');
      return;
    }
    for (const handler of this.handlers) handler(node, message);
  }

  private sweep(): void {
    const now = Date.now();
    for (const [key, entry] of this.partial) if (now - entry.at > REASSEMBLY_TIMEOUT_MS) this.partial.delete(key);
  }
}

/** One process alone (no database URL to listen on): nothing to share. */
export class LocalBus implements Bus {
  readonly node = randomUUID();
  publish(): void {}
  onMessage(): void {}
  onReconnect(): void {}
  async flush(): Promise<void> {}
}
