import pg from 'pg';
import type { Database } from '../db/client.js';
import { findSiteSetting } from './repository.js';
import { resolveSiteSetting, type SiteSettingKey, type SiteSettingValue } from './schemas.js';

export const SITE_SETTINGS_CHANNEL = 'site_settings_changed';

interface Entry { value: unknown; expiresAt: number }

/**
 * Site settings read through an in-process cache. Entries live `ttlMs` (5 minutes, as the spec says
 * for `run.input_limit`), but a NOTIFY from the `site_settings` trigger evicts a key at once, so a
 * `settings set` reaches every running API and worker within moments. When the LISTEN connection
 * drops, the whole cache is cleared (a missed notification must not pin a stale value) and the
 * listener reconnects.
 */
export class SiteSettingsCache {
  private readonly entries = new Map<string, Entry>();
  private readonly inflight = new Map<string, Promise<unknown>>();
  private listener: pg.Client | null = null;
  private closed = false;
  private reconnectTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Database,
    private readonly options: { ttlMs?: number; onInvalid?: (key: string, reason: string) => void; onListenerError?: (error: Error) => void } = {},
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
  }

  /** Subscribes to change notifications on a dedicated connection. */
  async listen(connectionString: string): Promise<void> {
    const client = new pg.Client({ connectionString, application_name: 'site-settings-listener' });
    client.on('notification', (message) => {
      if (message.channel === SITE_SETTINGS_CHANNEL) this.invalidate(message.payload || undefined);
    });
    const onLost = (error?: Error) => {
      if (this.listener !== client) return;
      this.listener = null;
      this.invalidate();
      client.end().catch(() => {});
      if (this.closed) return;
      if (error) this.options.onListenerError?.(error);
      this.scheduleReconnect(connectionString);
    };
    client.on('error', onLost);
    client.on('end', () => onLost());
    await client.connect();
    await client.query(`LISTEN ${SITE_SETTINGS_CHANNEL}`);
    this.listener = client;
    // Anything written while we were not listening is unknown: start clean.
    this.invalidate();
  }

  private scheduleReconnect(connectionString: string): void {
    if (this.closed) return;
    this.reconnectTimer = setTimeout(() => {
      this.listen(connectionString).catch((error: Error) => {
        this.options.onListenerError?.(error);
        this.scheduleReconnect(connectionString);
      });
    }, 1_000);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const client = this.listener;
    this.listener = null;
    await client?.end().catch(() => {});
  }
}
