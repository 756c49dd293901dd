import type { Database } from '../../db/client.js';
import type { JoinedChannel } from '../channel.js';
import type { ChangeSubscriptions } from '../postgres-changes.js';
import type { RelationCatalog } from '../relations.js';
import type { RealtimeLog } from '../socket-session.js';
import { ChangeCapture, DEFAULT_CAPTURE_LIMITS, type CaptureLimits } from './capture.js';
import { ChangeDispatcher } from './dispatcher.js';

/** How long a join waits for the replication slot before it is refused (supabase-js waits 10 s, then retries). */
const READY_TIMEOUT_MS = 5_000;
/** Capture stops after this long without any `postgres_changes` binding in this process. */
const IDLE_STOP_MS = 30_000;

export interface ChangeFeedOptions {
  url: string;
  db: Database;
  catalog: RelationCatalog;
  subscriptions: ChangeSubscriptions<JoinedChannel>;
  log: RealtimeLog;
  limits?: CaptureLimits;
  idleStopMs?: number;
}

/**
 * The row changes of one API process (docs/realtime.md "Row changes"). Capture runs only while
 * some channel of this process has a `postgres_changes` binding: the first such join starts it and
 * waits for its slot (so every change committed after the join's reply is delivered); it stops
 * when no binding was left for a while. When the stream is lost, every binding's channel is
 * errored (supabase-js rejoins by itself and refetches) and the next join starts a new slot.
 */
export class ChangeFeed {
  readonly dispatcher: ChangeDispatcher;
  private capture: ChangeCapture | null = null;
  private idleSince: number | null = null;
  private readonly idleTimer: NodeJS.Timeout;
  private closed = false;
  /** Counts lost streams: a join that waited for one stream must not be registered after it was lost. */
  private generation = 0;

  constructor(private readonly options: ChangeFeedOptions) {
    this.dispatcher = new ChangeDispatcher(options.db, options.catalog, options.subscriptions);
    const idleStopMs = options.idleStopMs ?? IDLE_STOP_MS;
    this.idleTimer = setInterval(() => this.stopWhenIdle(idleStopMs), Math.min(10_000, idleStopMs)).unref();
  }

  /** The slot this process reads now (tests), null when capture is off. */
  get slotName(): string | null {
    return this.capture?.slotName ?? null;
  }

  /**
   * Resolves once the capture's slot exists, with a token for `stillReading`; rejects when
   * PostgreSQL cannot be reached in time.
   */
  async ready(): Promise<number> {
    if (this.closed) throw new Error('shutting down');
    this.idleSince = null;
    const generation = this.generation;
    const capture = (this.capture ??= this.start());
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        capture.ready,
        new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('the database did not answer in time')), READY_TIMEOUT_MS); }),
      ]);
    } catch (error) {
      if (this.capture === capture && capture) {
        this.capture = null;
        this.generation++;
        await capture.stop();
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
    this.dispatcher.prime();
    return generation;
  }

  /** Is the stream a `ready()` waited for still the one being read (not lost since)? */
  stillReading(token: number): boolean {
    return this.generation === token && this.capture !== null;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.idleTimer);
    const capture = this.capture;
    this.capture = null;
    await capture?.stop();
    await this.dispatcher.close();
  }

  private start(): ChangeCapture {
    const capture: ChangeCapture = new ChangeCapture(
      this.options.url,
      (batch) => this.dispatcher.dispatch(batch),
      (error) => {
        if (this.capture !== capture) return;
        this.capture = null;
        this.generation++;
        void this.dispatcher.close();
        this.options.log('warn', 'realtime change capture lost; channels with postgres_changes rejoin', { err: error.message });
        for (const channel of this.options.subscriptions.all()) channel.interrupt('Lost the connection to the database log; rejoin and refetch');
      },
      this.options.limits ?? DEFAULT_CAPTURE_LIMITS,
    );
    return capture;
  }

  private stopWhenIdle(idleStopMs: number): void {
    if (!this.capture || this.options.subscriptions.size > 0) {
      this.idleSince = null;
      return;
    }
    this.idleSince ??= Date.now();
    if (Date.now() - this.idleSince < idleStopMs) return;
    const capture = this.capture;
    this.capture = null;
    this.idleSince = null;
    this.generation++;
    void capture.stop();
    void this.dispatcher.close();
  }
}
