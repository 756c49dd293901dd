import { sha256Hex } from '../crypto.js';
import type { Database } from '../db/client.js';
import { upsertSiteSetting } from '../site-settings/repository.js';
import { findSiteSettingUpdatedAt, listSiteSettingsByKeys } from './repository.js';

/**
 * The mobile client configuration (spec §2.16, §4.10 "Client-config details"): the `site_settings`
 * rows `client.<group>` of whitelisted groups, as one JSON view per (groups asked for, request
 * origin). Nothing outside the whitelist is ever read, so no other setting can leak into it.
 */
export const CLIENT_CONFIG_GROUPS = ['endpoints', 'models', 'thresholds', 'flags', 'transcribe', 'device1', 'firmware', 'board'] as const;
export type ClientConfigGroup = (typeof CLIENT_CONFIG_GROUPS)[number];

const KEY_PREFIX = 'client.';
export const clientConfigKey = (group: ClientConfigGroup): string => `${KEY_PREFIX}${group}`;
export const isClientConfigGroup = (name: string): name is ClientConfigGroup => (CLIENT_CONFIG_GROUPS as readonly string[]).includes(name);

const isJsonObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

export interface ClientConfigRow { group: ClientConfigGroup; value: Record<string, unknown>; updatedAt: Date }

/**
 * The whitelisted rows. A row whose value is not a JSON object (written by hand with `settings set`)
 * is left out, version included: a group is an object of keys or nothing.
 */
export async function loadClientConfigRows(db: Database): Promise<ClientConfigRow[]> {
  const rows = await listSiteSettingsByKeys(db, CLIENT_CONFIG_GROUPS.map(clientConfigKey));
  return rows.flatMap(({ key, value, updated_at }) => {
    const group = key.slice(KEY_PREFIX.length);
    return isClientConfigGroup(group) && isJsonObject(value) ? [{ group, value, updatedAt: updated_at }] : [];
  });
}

/**
 * `client-config set`: writes `client.<group>` (the table's trigger NOTIFYs every API, which drops
 * its view) and answers the row's update time in ms, the `version` the default view then has.
 */
export async function setClientConfig(db: Database, group: ClientConfigGroup, value: Record<string, unknown>): Promise<{ group: ClientConfigGroup; version: number }> {
  return db.transaction().execute(async (trx) => {
    await upsertSiteSetting(trx, clientConfigKey(group), value);
    // now() is the transaction's start, so this reads back exactly what the upsert wrote.
    const row = await findSiteSettingUpdatedAt(trx, clientConfigKey(group));
    return { group, version: row.updated_at.getTime() };
  });
}

/** The groups a `groups` query names, in whitelist order; unknown names are dropped, absent or blank means all. */
export function selectGroups(requested: string | undefined): ClientConfigGroup[] {
  if (requested === undefined || requested.trim() === '') return [...CLIENT_CONFIG_GROUPS];
  const names = new Set(requested.split(',').map((name) => name.trim()));
  return CLIENT_CONFIG_GROUPS.filter((group) => names.has(group));
}

// A DNS name (underscores tolerated, as in container names), IPv4, or a bracketed IPv6 literal; optional port.
const LABEL = '[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?';
const HOST = new RegExp(`^(?:${LABEL}(?:\\.${LABEL})*|\\[[0-9a-f:.]+\\])(?::(\\d{1,5}))?$`, 'i');

/**
 * The origin the endpoint URLs are rebuilt on, from Fastify's `request.protocol` and `request.host`
 * (which honour X-Forwarded-Proto/-Host from trusted proxies only). Anything that is not a plausible
 * `host[:port]` gives null: the stored URLs are then served unchanged rather than echoing junk.
 */
export function requestOrigin(protocol: string | undefined, host: string | undefined): string | null {
  const scheme = protocol?.trim().toLowerCase();
  const authority = host?.trim().toLowerCase() ?? '';
  if ((scheme !== 'http' && scheme !== 'https') || authority.length > 255) return null;
  const match = HOST.exec(authority);
  if (!match || (match[1] !== undefined && Number(match[1]) > 65_535)) return null;
  return `${scheme}://${authority}`;
}

/** Keys of `endpoints` whose origin is the requesting host's. */
const ORIGIN_KEYS = ['apiBaseUrl', 'oauthBaseUrl', 'modelGatewayBaseUrl'] as const;
/** Keys forced to https wherever they appear, at any depth of any group. */
const HTTPS_KEYS = new Set(['modelManifestUrl', 'modelBaseUrl', 'modelDownloadBaseUrl']);

/** `url` on `origin`, keeping its path, query and fragment verbatim; a value that is neither absolute nor a path stays as it is. */
export function withOrigin(url: string, origin: string): string {
  const authority = /^(?:[a-z][a-z0-9+.-]*:)?\/\/[^/?#]*/i.exec(url);
  if (authority) return origin + url.slice(authority[0].length);
  return url.startsWith('/') ? origin + url : url;
}

export const forceHttps = (url: string): string => url.replace(/^http:\/\//i, 'https://');

function forceHttpsDeep(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(forceHttpsDeep);
  if (!isJsonObject(value)) return value;
  return Object.fromEntries(Object.entries(value).map(([key, inner]) =>
    [key, HTTPS_KEYS.has(key) && typeof inner === 'string' ? forceHttps(inner) : forceHttpsDeep(inner)]));
}

/** A group as served: model URLs on https; in `endpoints`, the three base URLs on the caller's origin (top level only). */
export function presentGroup(group: ClientConfigGroup, value: Record<string, unknown>, origin: string | null): Record<string, unknown> {
  const shown = forceHttpsDeep(value) as Record<string, unknown>;
  if (group !== 'endpoints' || origin === null) return shown;
  for (const key of ORIGIN_KEYS) {
    const url = shown[key];
    if (typeof url === 'string') shown[key] = withOrigin(url, origin);
  }
  return shown;
}

export interface RenderedClientConfig { body: string; etag: string }

/** The exact response body `{ version, updatedAt, groups }` and its strong ETag (a hash of those bytes). */
export function renderClientConfig(rows: ReadonlyMap<ClientConfigGroup, ClientConfigRow>, groups: readonly ClientConfigGroup[], origin: string | null): RenderedClientConfig {
  const shown: Record<string, unknown> = {};
  let newest: Date | null = null;
  for (const group of groups) {
    const row = rows.get(group);
    if (!row) continue;
    shown[group] = presentGroup(group, row.value, origin);
    if (newest === null || row.updatedAt > newest) newest = row.updatedAt;
  }
  const body = JSON.stringify({ version: newest?.getTime() ?? 0, updatedAt: newest?.toISOString() ?? null, groups: shown });
  return { body, etag: `"${sha256Hex(body)}"` };
}

/**
 * The rows in memory and each rendered view memoized, so a conditional GET costs a map lookup and a
 * string compare. A site-settings change on a `client.` key (or on any key, `undefined`: a listener
 * reconnect) drops both; the next request reloads once however many arrive together.
 */
export class ClientConfigView {
  private rows: Map<ClientConfigGroup, ClientConfigRow> | null = null;
  private loading: Promise<Map<ClientConfigGroup, ClientConfigRow>> | null = null;
  /** Bumped by every change, so a load or render begun before it is not kept after it. */
  private generation = 0;
  private readonly rendered = new Map<string, RenderedClientConfig>();
  private readonly stopFollowing: () => void;

  constructor(
    private readonly load: () => Promise<ClientConfigRow[]>,
    onChange: (listener: (key: string | undefined) => void) => () => void,
    /** Views kept: 255 group selections times a few hosts; past it the oldest goes (hosts come from callers). */
    private readonly maxRendered = 512,
  ) {
    this.stopFollowing = onChange((key) => {
      if (key === undefined || key.startsWith(KEY_PREFIX)) this.invalidate();
    });
  }

  invalidate(): void {
    this.generation++;
    this.rows = null;
    this.loading = null;
    this.rendered.clear();
  }

  async get(groups: readonly ClientConfigGroup[], origin: string | null): Promise<RenderedClientConfig> {
    const memoKey = `${groups.join(',')} ${origin ?? ''}`;
    const hit = this.rendered.get(memoKey);
    if (hit) return hit;
    const generation = this.generation;
    const rendered = renderClientConfig(await this.currentRows(), groups, origin);
    if (generation === this.generation) {
      if (this.rendered.size >= this.maxRendered) this.rendered.delete(this.rendered.keys().next().value!);
      this.rendered.set(memoKey, rendered);
    }
    return rendered;
  }

  close(): void {
    this.stopFollowing();
  }

  private currentRows(): Promise<Map<ClientConfigGroup, ClientConfigRow>> {
    if (this.rows) return Promise.resolve(this.rows);
    if (this.loading) return this.loading;
    const generation = this.generation;
    const loading = this.load()
      .then((list) => {
        const rows = new Map(list.map((row) => [row.group, row] as const));
        if (generation === this.generation) this.rows = rows;
        return rows;
      })
      // A failed load is not kept: the next request tries again.
      .finally(() => { if (this.loading === loading) this.loading = null; });
    this.loading = loading;
    return loading;
  }
}
