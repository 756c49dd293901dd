import type { Database } from '../db/client.js';
import type { SiteSettingsCache } from '../site-settings/cache.js';
import { siteSettingDefinitions } from '../site-settings/schemas.js';
import { findLiveBillingRules, retireBillingRulesExcept, upsertLiveBillingRule } from './billing-rules-repository.js';
import type { BillingRules } from './pricing.js';

// The run prices (docs/billing.md "Price rules") are rows of `billing_rules`, one a key of the
// old site setting `billing.rules`, whose schema and defaults stay the one definition of what a
// key may hold. Readers go through a per-process cache dropped by the table's NOTIFY (migration
// 0027 sends it on the site-settings channel, which every API and worker already follows), so the
// run path reads memory and a price change reaches every process within moments, without restart.

const definition = siteSettingDefinitions['billing.rules'];
const fieldSchemas = definition.schema.shape;

export type BillingRuleKey = keyof typeof fieldSchemas;
export const BILLING_RULE_KEYS = Object.keys(fieldSchemas) as BillingRuleKey[];
/** The NOTIFY payload (and settings-cache key) of a change to the rules. */
export const BILLING_RULES_CHANGE_KEY = 'billing.rules';

const isRuleKey = (key: string): key is BillingRuleKey => Object.hasOwn(fieldSchemas, key);

export type BillingRuleCheck = { ok: true; ruleKey: BillingRuleKey } | { ok: false; message: string };

/**
 * Whether `value` may be stored under `ruleKey` (the REST engine asks before a data-API write, the
 * CLI before `settings set billing.rules`; the table's CHECK constraints say the same in SQL).
 */
export function validateBillingRule(ruleKey: string, value: unknown): BillingRuleCheck {
  if (!isRuleKey(ruleKey)) return { ok: false, message: `Unknown billing rule "${ruleKey}": known rules are ${BILLING_RULE_KEYS.join(', ')}` };
  const parsed = fieldSchemas[ruleKey].unwrap().safeParse(value);
  if (parsed.success) return { ok: true, ruleKey };
  const reason = parsed.error.issues.map((i) => `${[ruleKey, ...i.path].join('.')}: ${i.message}`).join('; ');
  return { ok: false, message: `Invalid value for billing rule ${reason}` };
}

/** The prices the rows give: each valid row over its default; a bad row (only ever one from before the CHECK) counts as absent. */
export function rulesFromRows(rows: ReadonlyArray<{ rule_key: string; value: unknown }>, onInvalid: (message: string) => void = () => {}): BillingRules {
  const rules: BillingRules = { ...definition.defaults, llmModelPer1kTokensMilli: { ...definition.defaults.llmModelPer1kTokensMilli } };
  for (const row of rows) {
    const check = validateBillingRule(row.rule_key, row.value);
    if (check.ok) (rules as Record<BillingRuleKey, unknown>)[check.ruleKey] = row.value;
    else onInvalid(check.message);
  }
  return rules;
}

/**
 * The price list read through memory. Entries live `ttlMs` (5 minutes, as site settings) unless a
 * change notification or a lost LISTEN connection (the settings cache reports both) drops them first.
 * A load reads through the caller's `db`, never a handle kept from an earlier caller: that may have
 * been a transaction which has since ended (a run admitted inside a connector dispatch's transaction).
 */
export class BillingRulesCache {
  private value: { rules: BillingRules; expiresAt: number } | null = null;
  private inflight: Promise<BillingRules> | null = null;
  /** Bumped by every invalidation, so a load that started before a change is not kept after it. */
  private generation = 0;

  constructor(private readonly options: { ttlMs?: number; onInvalid?: (message: string) => void } = {}) {}

  async get(db: Database): Promise<BillingRules> {
    if (this.value && this.value.expiresAt > Date.now()) return this.value.rules;
    if (this.inflight) return this.inflight;
    const generation = this.generation;
    const load = findLiveBillingRules(db)
      .then((rows) => {
        const rules = rulesFromRows(rows, this.options.onInvalid);
        if (generation === this.generation) this.value = { rules, expiresAt: Date.now() + (this.options.ttlMs ?? 300_000) };
        return rules;
      })
      .finally(() => { if (this.inflight === load) this.inflight = null; });
    this.inflight = load;
    return load;
  }

  invalidate(): void {
    this.generation += 1;
    this.value = null;
    this.inflight = null;
  }

  /** Drops the cache whenever the settings cache hears `billing.rules` changed (or may have missed a change). */
  follow(settings: Pick<SiteSettingsCache, 'onChange'>): void {
    settings.onChange((key) => { if (key === undefined || key === BILLING_RULES_CHANGE_KEY) this.invalidate(); });
  }
}

// One cache per settings cache, that is per process (API, worker, test stack), made on first use:
// the callers already hold both the database and the settings cache, so nothing new is wired. A
// settings reader that cannot report changes (a bare `get`) gets no cache: every read is fresh.
const caches = new WeakMap<object, BillingRulesCache>();
const reportsChanges = (settings: object): settings is Pick<SiteSettingsCache, 'onChange'> =>
  typeof (settings as Partial<SiteSettingsCache>).onChange === 'function';

/** The current prices, from memory when fresh (the run path's read). */
export async function currentBillingRules(deps: { db: Database; settings: object }): Promise<BillingRules> {
  let cache = caches.get(deps.settings);
  if (!cache) {
    if (!reportsChanges(deps.settings)) return rulesFromRows(await findLiveBillingRules(deps.db));
    cache = new BillingRulesCache();
    cache.follow(deps.settings);
    caches.set(deps.settings, cache);
  }
  return cache.get(deps.db);
}

/**
 * `settings set billing.rules <object>` (docs/billing.md "Price rules"): the object becomes the live
 * rows, each key given is set and each key left out goes back to its default (its row is soft-deleted),
 * in one transaction, so the rows always equal the last value set. Throws on the first bad key or value.
 */
export async function replaceBillingRules(db: Database, value: unknown): Promise<BillingRules> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new BillingRuleError('The value of billing.rules must be a JSON object of rules');
  }
  const entries = Object.entries(value);
  for (const [key, ruleValue] of entries) {
    const check = validateBillingRule(key, ruleValue);
    if (!check.ok) throw new BillingRuleError(check.message);
  }
  await db.transaction().execute(async (trx) => {
    for (const [key, ruleValue] of entries) await upsertLiveBillingRule(trx, key, ruleValue);
    await retireBillingRulesExcept(trx, entries.map(([key]) => key));
  });
  return rulesFromRows(await findLiveBillingRules(db));
}

export class BillingRuleError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BillingRuleError';
  }
}
