import type { Database } from '../db/client.js';
import type { PgListener } from '../db/listener.js';
import { findSiteSetting } from './repository.js';
import { resolveSiteSetting, type SiteSettingKey, type SiteSettingValue } from './schemas.js';

export const SITE_SETTINGS_CHANNEL = 'site_settings_changed';

interface Entry { value: unknown; expiresAt: number }

/**
 * Site settings read through an in-process cache. Entries live `ttlMs` (5 minutes, as the spec says
 * for `run.input_limit`), but a NOTIFY from the `site_settings` trigger evicts a key at once, so a
 * `settings set` reaches every running API and worker within moments. When the LISTEN connection
 * drops, the whole cache is cleared: a missed notification must not pin a stale value.
 */
export class SiteSettingsCache {
  private readonly entries = new Map<string, Entry>();
  private readonly inflight = new Map<string, Promise<unknown>>();
  private readonly changeListeners: Array<(key: string | undefined) => void> = [];

  constructor(
    private readonly db: Database,
    private readonly options: { ttlMs?: number; onInvalid?: (key: string, reason: string) => void } = {},
  ) {}

  /** The effective, validated value of a known setting (defaults when missing or invalid). */
  async get<K extends SiteSettingKey>(key: K): Promise<SiteSettingValue<K>> {
    return resolveSiteSetting(key, await this.getRaw(key), this.options.onInvalid);
  }

  /** The stored JSON value, or undefined when no row exists. */
  async getRaw(key: string): Promise<unknown> {
    const hit = this.entries.get(key);
    if (hit && hit.expiresAt > Date.now()) return hit.value;
    const pending = this.inflight.get(key);
    if (pending) return pending;
    const load = findSiteSetting(this.db, key)
      .then((row) => {
        this.entries.set(key, { value: row?.value, expiresAt: Date.now() + (this.options.ttlMs ?? 300_000) });
        return row?.value;
      })
      .finally(() => this.inflight.delete(key));
    this.inflight.set(key, load);
    return load;
  }

  invalidate(key?: string): void {
    if (key === undefined) this.entries.clear();
    else this.entries.delete(key);
    for (const listener of this.changeListeners) listener(key);
  }

  /**
   * Calls `listener` whenever a key may have changed (`undefined`: any key), so views derived from
   * several rows (the public client config) are dropped together with the rows they were built from.
   */
  onChange(listener: (key: string | undefined) => void): () => void {
    this.changeListeners.push(listener);
    return () => {
      const at = this.changeListeners.indexOf(listener);
      if (at >= 0) this.changeListeners.splice(at, 1);
    };
  }

  /** Follows change notifications on the process's shared listener. */
  follow(listener: PgListener): void {
    listener.on(SITE_SETTINGS_CHANNEL, (key) => this.invalidate(key || undefined));
    listener.onReconnect(() => this.invalidate());
  }
}
