import { LRUCache } from 'lru-cache';
import type { PgListener } from '../db/listener.js';
import type { DeploymentRow } from './deployments-repository.js';

/** NOTIFY channel of the `deployments` trigger; the payload is the document id. */
export const DEPLOYMENTS_CHANNEL = 'deployments_changed';

/**
 * The live deployments of each document, as the run endpoints look them up: every run request
 * asks, and after an idle moment that round trip to PostgreSQL was a tenth of the time to the
 * first streamed byte. A deployment is an immutable snapshot, so an entry only goes stale when one
 * is published, deleted or changed; the `deployments` trigger NOTIFYs its document id, which evicts
 * the entry in every API process. Entries are served only while the LISTEN connection is up, and
 * all are dropped when it drops: a missed notification must not keep a deleted deployment runnable.
 * A load that overlaps an eviction is returned but not kept, so it cannot put back what was evicted.
 */
export class DeploymentCache {
  /** Bounded by rows, not documents: a document with hundreds of versions weighs hundreds. */
  private readonly byDocument = new LRUCache<string, DeploymentRow[]>({ maxSize: 20_000, sizeCalculation: (rows) => Math.max(1, rows.length), ttl: 5 * 60_000 });
  /** Deployment id → document id: a deployment never moves, so this needs no eviction. */
  private readonly documentOf = new LRUCache<string, string>({ max: 100_000 });
  private generation = 0;
  private listening: () => boolean = () => false;

  /**
   * The document's live deployments, named by the document or by one of its deployments, from the
   * cache or from `load` (which finds them the same way, or nothing).
   */
  async candidates(by: { deploymentId?: string; documentId?: string }, load: () => Promise<DeploymentRow[]>): Promise<DeploymentRow[]> {
    const documentId = by.documentId ?? this.documentOf.get(by.deploymentId!);
    const hit = documentId !== undefined && this.listening() ? this.byDocument.get(documentId) : undefined;
    if (hit) return hit;
    const generation = this.generation;
    const rows = await load();
    // Empty answers are not kept: unknown ids are not worth memory, and they are the rare case.
    if (rows.length > 0 && generation === this.generation && this.listening()) {
      const document = rows[0]!.document_id;
      this.byDocument.set(document, rows);
      for (const row of rows) this.documentOf.set(row.id, document);
    }
    return rows;
  }

  evict(documentId: string): void {
    this.generation++;
    this.byDocument.delete(documentId);
  }

  clear(): void {
    this.generation++;
    this.byDocument.clear();
  }

  /** Follows the trigger's notifications; until this is called nothing is cached. */
  follow(listener: PgListener): void {
    this.listening = () => listener.connected;
    listener.on(DEPLOYMENTS_CHANNEL, (documentId) => (documentId ? this.evict(documentId) : this.clear()));
    listener.onReconnect(() => this.clear());
  }
}
