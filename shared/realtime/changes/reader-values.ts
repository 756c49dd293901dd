import { LRUCache } from 'lru-cache';
import type { ReaderFunction } from './reader-dependence.js';

// The readers' values of the reader functions (./reader-dependence.ts): what groups readers for a
// check. A value costs a call of the function (about 75 µs for access_reader_team_ids, measured),
// 500 readers about 40 ms a batch; so values are kept between batches while the content of the
// tables the function reads is unchanged. Each batch measures that content's fingerprint on its
// own snapshot (./authorization-repository.ts): a different fingerprint drops the function's
// values, so a value used for a batch is always the one its snapshot would compute (a member
// removed from a team is regrouped in the first batch whose snapshot sees the removal).

/** Readers' values kept per function, at most (the least recently used go first). */
const KEPT_PER_FUNCTION = 100_000;

/**
 * Scanning a function's tables to keep its values is worth it while they have fewer rows than
 * this many per reader whose value it saves (measured: a value of access_reader_team_ids costs
 * about 75 µs, a row scanned about 0.5 µs); bigger tables: values computed each batch.
 */
const ROWS_SCANNED_PER_VALUE = 150;

export class ReaderValueCache {
  private readonly byFunction = new Map<number, { fingerprint: string; values: LRUCache<string, string> }>();

  /** The value of `fn` for `sub` computed when its tables had `fingerprint`, if kept. */
  get(fn: number, fingerprint: string, sub: string): string | undefined {
    const kept = this.byFunction.get(fn);
    return kept && kept.fingerprint === fingerprint ? kept.values.get(sub) : undefined;
  }

  /** The fingerprint the kept values of `fn` were computed at (null: none kept). */
  fingerprintOf(fn: number): string | null {
    return this.byFunction.get(fn)?.fingerprint ?? null;
  }

  set(fn: number, fingerprint: string, sub: string, value: string): void {
    let kept = this.byFunction.get(fn);
    if (!kept || kept.fingerprint !== fingerprint) this.byFunction.set(fn, (kept = { fingerprint, values: new LRUCache({ max: KEPT_PER_FUNCTION }) }));
    kept.values.set(sub, value);
  }
}

/** What a batch asks PostgreSQL for: the fingerprints of the kept functions' tables, and the values not kept. */
export interface ValuePlan {
  functions: readonly ReaderFunction[];
  subs: readonly string[];
  /** Functions whose values are kept (and validated by their tables' fingerprints). */
  kept: readonly ReaderFunction[];
  /** Tables to fingerprint. */
  tables: ReadonlyArray<{ oid: number; name: string }>;
  /** Subs whose values to compute (if the kept ones' tables turn out unchanged). */
  toCompute: readonly string[];
}

export function planValues(functions: readonly ReaderFunction[], subs: readonly string[], cache: ReaderValueCache, catalogFingerprint: string, keep = true): ValuePlan {
  const kept = keep ? functions.filter((f) => f.cacheable && f.tableRows <= ROWS_SCANNED_PER_VALUE * subs.length) : [];
  const tables = [...new Map(kept.flatMap((f) => f.tables).map((t) => [t.oid, t])).values()];
  const keptAt = kept.map((f) => ({ oid: f.oid, fingerprint: cache.fingerprintOf(f.oid) }));
  const allKept = kept.length === functions.length && keptAt.every((k) => k.fingerprint?.startsWith(`${catalogFingerprint}|`));
  const toCompute = allKept ? subs.filter((sub) => keptAt.some((k) => cache.get(k.oid, k.fingerprint!, sub) === undefined)) : subs;
  return { functions, subs, kept, tables, toCompute };
}

/**
 * The readers' values for one batch: those computed on its snapshot, else those kept at the
 * fingerprints its snapshot measured. Computed values of kept functions are kept.
 */
export class BatchValues {
  private readonly computed = new Map<string, ReadonlyArray<string | null>>();
  private readonly column: ReadonlyMap<number, number>;
  /** Kept function → the fingerprint of its tables now (the catalog's in front). */
  private readonly keptAt: ReadonlyMap<number, string>;

  constructor(private readonly plan: ValuePlan, fingerprints: ReadonlyMap<number, string>, catalogFingerprint: string, private readonly cache: ReaderValueCache) {
    this.column = new Map(plan.functions.map((f, i) => [f.oid, i + 1]));
    this.keptAt = new Map(plan.kept.map((f) => [f.oid, `${catalogFingerprint}|${f.tables.map((t) => fingerprints.get(t.oid)).join(',')}`]));
  }

  /** Rows computed on the batch's snapshot: the sub, then one value per function in the plan's order. */
  add(rows: ReadonlyArray<ReadonlyArray<string | null>>): void {
    for (const row of rows) {
      this.computed.set(row[0]!, row);
      for (const [oid, fingerprint] of this.keptAt) this.cache.set(oid, fingerprint, row[0]!, row[this.column.get(oid)!] ?? '');
    }
  }

  /** The subs with a value missing (not computed, and not kept at the tables' content now). */
  missing(): string[] {
    if (this.keptAt.size !== this.plan.functions.length) return this.plan.subs.filter((sub) => !this.computed.has(sub));
    return this.plan.subs.filter((sub) => {
      if (this.computed.has(sub)) return false;
      for (const [oid, fingerprint] of this.keptAt) if (this.cache.get(oid, fingerprint, sub) === undefined) return true;
      return false;
    });
  }

  valueOf(sub: string, fn: number): string | undefined {
    const row = this.computed.get(sub);
    if (row) return row[this.column.get(fn)!] ?? '';
    const fingerprint = this.keptAt.get(fn);
    return fingerprint === undefined ? undefined : this.cache.get(fn, fingerprint, sub);
  }
}
