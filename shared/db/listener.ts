import pg from 'pg';

type Handler = (payload: string) => void;

/**
 * One LISTEN connection per process, shared by every subscriber (site settings, run events).
 * When the connection drops it reconnects, re-LISTENs, and tells `onReconnect` subscribers, who
 * must assume they missed notifications (caches clear, streams re-read the table).
 */
export class PgListener {
  private client: pg.Client | null = null;
  private readonly handlers = new Map<string, Set<Handler>>();
  private readonly reconnectHandlers = new Set<() => void>();
  private closed = false;
  private reconnectTimer: NodeJS.Timeout | null = null;

  constructor(private readonly connectionString: string, private readonly onError: (error: Error) => void = () => {}) {}

  /** Subscribes to a channel; the returned function unsubscribes. Call `start()` once. */
  on(channel: string, handler: Handler): () => void {
    const isNew = !this.handlers.has(channel);
    const set = this.handlers.get(channel) ?? new Set();
    set.add(handler);
    this.handlers.set(channel, set);
    if (isNew && this.client) this.client.query(`LISTEN ${pg.escapeIdentifier(channel)}`).catch((e: Error) => this.onError(e));
    return () => { set.delete(handler); };
  }

  /** True while LISTEN is in place: a cache may trust that it hears every change. */
  get connected(): boolean {
    return this.client !== null;
  }

  onReconnect(handler: () => void): () => void {
    this.reconnectHandlers.add(handler);
    return () => { this.reconnectHandlers.delete(handler); };
  }

  async start(): Promise<void> {
    const client = new pg.Client({ connectionString: this.connectionString, application_name: 'wfapp-listener' });
    client.on('notification', (message) => {
      for (const handler of this.handlers.get(message.channel) ?? []) handler(message.payload ?? '');
    });
    const lost = (error?: Error) => {
      if (this.client !== client) return;
      this.client = null;
      client.end().catch(() => {});
      if (this.closed) return;
      if (error) this.onError(error);
      for (const handler of this.reconnectHandlers) handler();
      this.scheduleReconnect();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    await client.connect();
    for (const channel of this.handlers.keys()) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    this.client = client;
  }

  private scheduleReconnect(): void {
    if (this.closed) return;
    this.reconnectTimer = setTimeout(() => {
      this.start()
        .then(() => { for (const handler of this.reconnectHandlers) handler(); })
        .catch((error: Error) => { this.onError(error); this.scheduleReconnect(); });
    }, 1_000);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => {});
  }
}
