import { randomBytes } from 'node:crypto';
import type { Client } from 'pg';
import { LogicalReplicationService, PgoutputPlugin, type Pgoutput } from 'pg-logical-replication';

// Change capture from PostgreSQL's own log (docs/realtime.md "Row changes"): logical replication
// with the `pgoutput` plugin of the publication `realtime_changes` (migration 0028), read through
// the maintained client `pg-logical-replication`. One TEMPORARY slot per API process: PostgreSQL
// drops it with the connection, so a crashed process pins no WAL; the price is that changes made
// while the connection is down are not replayed (the channels are told, rejoin and refetch).

export const PUBLICATION = 'realtime_changes';

export type ChangeType = 'INSERT' | 'UPDATE' | 'DELETE';

export interface RowChange {
  /** The base table (schema public). */
  table: string;
  type: ChangeType;
  /** The new row (INSERT, UPDATE); null for a DELETE. */
  record: Record<string, unknown> | null;
  /** The old row's primary key (UPDATE, DELETE). */
  oldKey: Record<string, unknown> | null;
}

export interface CapturedTransaction {
  xid: number;
  /** Where the transaction's commit ends in the log: acknowledged once it was delivered. */
  endLsn: string;
  commitTimestamp: string;
  changes: RowChange[];
  /** Tables of this transaction whose changes were dropped (too many to hold): their subscribers must refetch. */
  dropped: Set<string>;
}

export interface CaptureLimits {
  /** Row changes of one transaction held at most; more are dropped (the table's subscribers are told to refetch). */
  maxChangesPerTransaction: number;
  /** Committed transactions waiting for delivery at most; then the replication stream is paused (the slot lags, memory does not grow). */
  maxQueuedTransactions: number;
}

export const DEFAULT_CAPTURE_LIMITS: CaptureLimits = { maxChangesPerTransaction: 10_000, maxQueuedTransactions: 200 };

/** pgoutput behind a slot created on the same connection, TEMPORARY (gone with the connection). */
class TemporarySlotPgoutput extends PgoutputPlugin {
  constructor(private readonly onSlot: (consistentPoint: string) => void) {
    super({ protoVersion: 1, publicationNames: [PUBLICATION] });
  }

  override async start(client: Client, slotName: string): Promise<unknown> {
    const created = await client.query<{ consistent_point: string }>(`CREATE_REPLICATION_SLOT "${slotName}" TEMPORARY LOGICAL pgoutput NOEXPORT_SNAPSHOT`);
    const from = created.rows[0]!.consistent_point;
    this.onSlot(from);
    return super.start(client, slotName, from);
  }
}

const compareLsn = (a: string, b: string): number => {
  const [ah, al] = a.split('/').map((x) => parseInt(x, 16)) as [number, number];
  const [bh, bl] = b.split('/').map((x) => parseInt(x, 16)) as [number, number];
  return ah !== bh ? ah - bh : al - bl;
};

const keyOf = (relation: Pgoutput.MessageRelation, row: Record<string, unknown> | null): Record<string, unknown> | null =>
  row && Object.fromEntries(relation.keyColumns.map((c) => [c, row[c]]));

/**
 * One replication connection and its temporary slot. `deliver` gets committed transactions in
 * commit order, a batch at a time; the slot is acknowledged up to a batch once `deliver` resolved
 * (handed to every socket, or deliberately dropped). `lost` is called once when the stream ends
 * unasked (PostgreSQL restarted, connection cut, a delivery failed): what was not delivered is gone.
 */
export class ChangeCapture {
  private readonly service: LogicalReplicationService;
  private readonly slot = `realtime_${randomBytes(6).toString('hex')}`;
  private open: CapturedTransaction | null = null;
  private readonly queue: CapturedTransaction[] = [];
  private draining: Promise<void> | null = null;
  private delivered: string | null = null;
  /** The last position confirmed to PostgreSQL. */
  private acknowledged: string | null = null;
  private stopped = false;
  private failed = false;
  readonly ready: Promise<void>;

  constructor(
    url: string,
    private readonly deliver: (batch: CapturedTransaction[]) => Promise<void>,
    private readonly lost: (error: Error) => void,
    private readonly limits: CaptureLimits = DEFAULT_CAPTURE_LIMITS,
  ) {
    // Our own acknowledgements only: the library's timer would confirm what was received, not delivered.
    this.service = new LogicalReplicationService({ connectionString: url, application_name: 'realtime-changes' }, { acknowledge: { auto: false, timeoutSeconds: 0 }, flowControl: { enabled: true } });
    this.service.on('data', (_lsn: string, message: Pgoutput.Message) => this.onMessage(message));
    this.service.on('heartbeat', (lsn: string, _time: number, reply: boolean) => void this.onHeartbeat(lsn, reply));
    this.service.on('error', (error: Error) => this.fail(error));
    this.ready = new Promise<void>((resolve, reject) => {
      const plugin = new TemporarySlotPgoutput((point) => { this.delivered = point; resolve(); });
      this.service.subscribe(plugin, this.slot)
        .then(() => this.fail(new Error('replication stream ended')))
        .catch((error: Error) => { reject(error); this.fail(error); });
    });
    this.ready.catch(() => {});
  }

  get slotName(): string {
    return this.slot;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.service.destroy().catch(() => {});
  }

  private fail(error: Error): void {
    if (this.stopped || this.failed) return;
    this.failed = true;
    this.queue.length = 0;
    void this.service.destroy().catch(() => {});
    this.lost(error);
  }

  /** Awaited by the library before it reads on (flow control): a full queue holds the stream. */
  private async onMessage(message: Pgoutput.Message): Promise<void> {
    switch (message.tag) {
      case 'begin':
        this.open = { xid: message.xid, endLsn: '', commitTimestamp: new Date(Number(BigInt(message.commitTime as bigint) / 1000n)).toISOString(), changes: [], dropped: new Set() };
        return;
      case 'insert':
        return this.add(message.relation, { table: message.relation.name, type: 'INSERT', record: message.new, oldKey: null });
      case 'update':
        return this.add(message.relation, { table: message.relation.name, type: 'UPDATE', record: message.new, oldKey: keyOf(message.relation, message.key ?? message.old ?? message.new) });
      case 'delete':
        return this.add(message.relation, { table: message.relation.name, type: 'DELETE', record: null, oldKey: keyOf(message.relation, message.key ?? message.old) });
      case 'commit': {
        const tx = this.open;
        this.open = null;
        if (!tx || !message.commitEndLsn) return;
        tx.endLsn = message.commitEndLsn;
        this.queue.push(tx);
        this.drain();
        while (this.queue.length >= this.limits.maxQueuedTransactions && this.draining && !this.failed) await this.draining;
        return;
      }
      default:
        return; // relation, type, origin, truncate (not delivered: subscribers see the rows go by refetching), message
    }
  }

  private add(relation: Pgoutput.MessageRelation, change: RowChange): void {
    const tx = this.open;
    if (!tx || relation.schema !== 'public') return;
    if (tx.changes.length >= this.limits.maxChangesPerTransaction) tx.dropped.add(change.table);
    else tx.changes.push(change);
  }

  private drain(): void {
    if (this.draining) return;
    this.draining = (async () => {
      while (this.queue.length && !this.failed && !this.stopped) {
        const batch = this.queue.splice(0, this.queue.length);
        try {
          await this.deliver(batch);
        } catch (error) {
          return this.fail(error as Error);
        }
        this.delivered = batch.at(-1)!.endLsn;
        await this.acknowledge(this.delivered);
      }
    })().finally(() => { this.draining = null; });
  }

  /**
   * A keepalive: PostgreSQL tells where its log is and may ask for a status. Confirm what was
   * delivered; with nothing in flight (no open transaction, nothing queued, the library holding
   * nothing), everything up to its position was seen, so confirm that: an idle publication does
   * not pin WAL. Unasked keepalives are answered too when they move the confirmed position: the
   * server sends one once it has read past what we confirmed (WAL of other databases, changes to
   * tables outside the publication), and asks for a reply only after half of
   * `wal_sender_timeout` (30 s by default) — the slot would lag that long.
   */
  private async onHeartbeat(lsn: string, replyRequested: boolean): Promise<void> {
    const library = this.service as unknown as { _messageQueue?: unknown[]; _processing?: boolean };
    const idle = !this.open && !this.queue.length && !this.draining && !library._messageQueue?.length && !library._processing;
    const confirm = idle && (!this.delivered || compareLsn(lsn, this.delivered) > 0) ? lsn : this.delivered;
    if (confirm && (replyRequested || confirm !== this.acknowledged)) await this.acknowledge(confirm);
  }

  private async acknowledge(lsn: string): Promise<void> {
    this.acknowledged = lsn;
    await this.service.acknowledge(lsn).catch(() => {});
  }
}
