import { sql } from 'kysely';
import type { Database } from '../db/client.js';
import type { ConnectionStatus } from '../db/types.js';
import { AppError } from '../errors.js';
import { assertWithinLimits, perMinute } from '../rate-limit/limits.js';
import type { RateLimiter } from '../rate-limit/rate-limiter.js';
import type { SecretKeyRing } from '../secrets/key-ring.js';
import type { SiteSettingsCache } from '../site-settings/cache.js';
import { requireUsableConnector } from './catalog.js';
import { connectionNotFound, findOwnConnection } from './connections.js';
import type { ProbeResult } from './imap-probe.js';
import { connectorServices } from './services.js';
import { openCredentials, vettedAddress } from './upstream.js';

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

/** Spec §3.1: success → active (lastVerifiedAt now); credential_invalid → invalid; anything else → unchanged. */
function nextStatus(current: ConnectionStatus, result: ProbeResult): ConnectionStatus {
  if (result.ok) return 'active';
  return result.errorCode === 'credential_invalid' ? 'invalid' : current;
}

/** Applies the state table to what the upstream answered (a test or a poll); a delete that landed meanwhile wins: a revoked row is never revived. */
export async function recordUpstreamOutcome(db: Database, row: { id: string; status: ConnectionStatus }, result: ProbeResult): Promise<void> {
  await db.updateTable('connector_connections')
    .set({
      status: nextStatus(row.status, result),
      last_error_code: result.ok ? null : result.errorCode,
      ...(result.ok ? { last_verified_at: sql<Date>`now()` } : {}),
      updated_at: sql<Date>`now()`,
    })
    .where('id', '=', row.id).where('status', '<>', 'revoked')
    .execute();
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

  await recordUpstreamOutcome(deps.db, row, result);
  return result;
}
