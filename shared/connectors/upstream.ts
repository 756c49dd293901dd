import { HostResolutionError, InvalidUrlError, parseAllowList, parseIp, SsrfBlockedError, vetUrl } from '../outbound-http/ssrf-guard.js';
import { SealedSecretError, type SecretKeyRing } from '../secrets/key-ring.js';
import type { SiteSettingsCache } from '../site-settings/cache.js';
import { encryptionNotConfigured, sealContext, type ConnectionRow } from './connections.js';

// What every contact with a connection's upstream needs first (a connection test, a poll): its
// credentials opened, and the address the SSRF guard vetted for its host.

export function openCredentials(secrets: SecretKeyRing, row: Pick<ConnectionRow, 'id' | 'credentials_sealed'>): Record<string, string> {
  try {
    return Object.fromEntries(Object.entries(row.credentials_sealed).map(([key, sealed]) => [key, secrets.open(sealed, sealContext(row.id, key))]));
  } catch (error) {
    // Sealed by a key no longer configured: the operator's fix, not the user's.
    if (error instanceof SealedSecretError) throw encryptionNotConfigured();
    throw error;
  }
}

/**
 * The SSRF guard of the http block on the user's host (`http_block.allow_hosts` applies): the
 * vetted address the probe connects to (never a second lookup), or null when the guard refuses
 * the host or it does not resolve: `gateway_unreachable` without any connection.
 */
export async function vettedAddress(settings: Pick<SiteSettingsCache, 'get'>, endpoint: { host: string; port: number }): Promise<string | null> {
  const rules = parseAllowList(await settings.get('http_block.allow_hosts'));
  const host = parseIp(endpoint.host)?.kind() === 'ipv6' ? `[${endpoint.host}]` : endpoint.host;
  try {
    const target = await vetUrl(`http://${host}:${endpoint.port}/`, rules);
    return target.addresses[0]?.address ?? null;
  } catch (error) {
    if (error instanceof SsrfBlockedError || error instanceof InvalidUrlError || error instanceof HostResolutionError) return null;
    throw error;
  }
}
