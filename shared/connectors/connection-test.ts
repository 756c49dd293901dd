import { sql } from 'kysely';
import { HostResolutionError, InvalidUrlError, parseAllowList, parseIp, SsrfBlockedError, vetUrl } from '../app-runs/ssrf-guard.js';
import type { Database } from '../db/client.js';
import type { ConnectionStatus } from '../db/types.js';
import { AppError } from '../errors.js';
import { assertWithinLimits, perMinute } from '../rate-limit/limits.js';
import type { RateLimiter } from '../rate-limit/rate-limiter.js';
import { SealedSecretError, type SecretKeyRing } from '../secrets/key-ring.js';
import type { SiteSettingsCache } from '../site-settings/cache.js';
import { requireUsableConnector } from './catalog.js';
import { connectionNotFound, encryptionNotConfigured, findOwnConnection, sealContext, type ConnectionRow } from './connections.js';
import type { ProbeResult } from './imap-probe.js';
import { connectorServices } from './services.js';

// `POST …/connections/:id/test` (spec §3.1, §4.12 test rules): one light probe, then the state
// table. Only `credential_invalid` changes the status; every outcome records `lastErrorCode`.

export interface ConnectionTestDeps { db: Database; secrets: SecretKeyRing; settings: SiteSettingsCache; rateLimiter: RateLimiter }

/** 10 per minute per user by default (spec §8.2); spent before anything is looked up, so probing ids costs too. */
async function spendTestBudget(deps: ConnectionTestDeps, userId: string): Promise<void> {
  const points = await deps.settings.get('CONNECTOR_TEST_RATE_LIMIT_PER_MINUTE');
  try {
    await assertWithinLimits(deps.rateLimiter, [{ key: `connector-test:user:${userId}`, limit: perMinute(points) }], 'Too many connection tests; retry later');
  } catch (error) {
    // The connectors family's codes are lower case; the Retry-After headers stay.
    if (error instanceof AppError && error.status === 429) throw new AppError(429, 'rate_limited', error.message, {}, error.headers);
    throw error;
  }
}

function openCredentials(secrets: SecretKeyRing, row: ConnectionRow): Record<string, string> {
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
async function vettedAddress(settings: SiteSettingsCache, endpoint: { host: string; port: number }): Promise<string | null> {
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

/** Spec §3.1: success → active (lastVerifiedAt now); credential_invalid → invalid; anything else → unchanged. */
function nextStatus(current: ConnectionStatus, result: ProbeResult): ConnectionStatus {
  if (result.ok) return 'active';
  return result.errorCode === 'credential_invalid' ? 'invalid' : current;
}

export async function testConnection(deps: ConnectionTestDeps, userId: string, connectionId: string): Promise<ProbeResult> {
  await spendTestBudget(deps, userId);
  const row = await findOwnConnection(deps.db, userId, connectionId);
  // Revoked: its credentials are gone and it is never used again (docs/connectors.md).
  if (row.status === 'revoked') throw connectionNotFound();
  await requireUsableConnector(deps.db, row.service);
  const service = connectorServices[row.service];
  if (!service) throw new AppError(403, 'connector_not_approved', `Connector '${row.service}' has no implementation on this server`);
  const fields = openCredentials(deps.secrets, row);

  const address = await vettedAddress(deps.settings, service.endpoint(fields));
  const result: ProbeResult = address === null ? { ok: false, errorCode: 'gateway_unreachable' } : await service.probe(fields, address);

  // A delete that landed during the probe wins: a revoked row is never revived.
  await deps.db.updateTable('connector_connections')
    .set({
      status: nextStatus(row.status, result),
      last_error_code: result.ok ? null : result.errorCode,
      ...(result.ok ? { last_verified_at: sql<Date>`now()` } : {}),
      updated_at: sql<Date>`now()`,
    })
    .where('id', '=', row.id).where('status', '<>', 'revoked')
    .execute();
  return result;
}
