import type { Database } from '../../db/client.js';
import { REALTIME_RELATIONS } from '../relations.js';
import type { AnalysisStamp } from './authorization-repository.js';
import { fingerprintOf, loadPolicyCatalog } from './policy-repository.js';
import { analyzeReaderDependence, type PolicyAnalysis } from './reader-dependence.js';

/** The analysis is made again after this long, as the relation catalog is; each batch also compares the catalog's fingerprint. */
const REFRESH_MS = 60_000;

/**
 * The realtime relations' reader dependence (./reader-dependence.ts), analyzed from the catalog at
 * first use and again each minute (in the background), or as soon as a batch finds the catalog's
 * fingerprint changed (a policy or a function it calls was altered): that batch is checked per
 * reader meanwhile.
 */
export class RelationPolicies {
  private loaded: Promise<{ analysis: PolicyAnalysis; stamp: AnalysisStamp }> | null = null;
  private loadedAt = 0;
  private refreshing: Promise<void> | null = null;

  constructor(private readonly db: Database) {}

  current(): Promise<{ analysis: PolicyAnalysis; stamp: AnalysisStamp }> {
    if (!this.loaded) {
      this.loaded = this.reload();
    } else if (Date.now() - this.loadedAt > REFRESH_MS && !this.refreshing) {
      // Read again in the background, the batches keep the one they have meanwhile: each batch
      // checks the catalog's fingerprint anyway, so a change is never missed while this runs.
      this.refreshing = this.reload().then((next) => { this.loaded = Promise.resolve(next); }, () => {}).finally(() => { this.refreshing = null; });
    }
    return this.loaded;
  }

  private reload(): Promise<{ analysis: PolicyAnalysis; stamp: AnalysisStamp }> {
    this.loadedAt = Date.now();
    const loading = this.load();
    // A failed first load is not kept: the next batch tries again.
    loading.catch(() => { if (this.loaded === loading) this.loaded = null; });
    return loading;
  }

  invalidate(): void {
    this.loaded = null;
  }

  /** Catalog, analysis and fingerprint from one snapshot, so the fingerprint is the analysis's own. */
  private load(): Promise<{ analysis: PolicyAnalysis; stamp: AnalysisStamp }> {
    return this.db.transaction().setIsolationLevel('repeatable read').execute(async (trx) => {
      const analysis = analyzeReaderDependence(await loadPolicyCatalog(trx), REALTIME_RELATIONS);
      const fingerprint = await fingerprintOf(trx, analysis.functionOids, analysis.relationOids);
      return { analysis, stamp: { fingerprint, functionOids: analysis.functionOids, relationOids: analysis.relationOids } };
    });
  }
}
