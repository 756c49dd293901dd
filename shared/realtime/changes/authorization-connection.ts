import pg from 'pg';
import { poolOf, type Database } from '../../db/client.js';

/**
 * The connection the change authorization runs on: its own (made with the pool's settings), opened
 * at the first use and closed with the capture, not one borrowed from the pool per batch. So its
 * prepared statements and PostgreSQL's caches of the policies stay warm, a batch never waits for a
 * busy pool, and one batch at a time uses it (`use` queues the others).
 */
export class AuthorizationConnection {
  private client: pg.Client | null = null;
  private connecting: Promise<pg.Client> | null = null;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly db: Database) {}

  /** Runs `work` on the connection once the previous work finished; a failure drops the connection (the next use opens another). */
  use<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
    const run = this.queue.then(async () => {
      const client = await this.open();
      try {
        return await work(client);
      } catch (error) {
        // Its state is unknown (an open transaction, half-prepared statements).
        if (this.client === client) this.drop();
        throw error;
      }
    });
    this.queue = run.catch(() => {});
    return run;
  }

  /** Closes the connection (the capture stopped); a later `use` opens a new one. */
  close(): Promise<void> {
    return this.queue.then(() => this.drop());
  }

  private open(): Promise<pg.Client> {
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= (async () => {
      const pool = poolOf(this.db);
      if (!pool) throw new Error("realtime authorization needs the service's root Database (with its pool), not a transaction");
      const client = new pg.Client({ ...(pool.options as pg.ClientConfig), application_name: 'realtime-authorization' });
      client.on('error', () => { if (this.client === client) this.client = null; });
      try {
        await client.connect();
      } catch (error) {
        await client.end().catch(() => {});
        throw error;
      }
      this.client = client;
      return client;
    })().finally(() => { this.connecting = null; });
    return this.connecting;
  }

  private drop(): void {
    const client = this.client;
    this.client = null;
    void client?.end().catch(() => {});
  }
}
