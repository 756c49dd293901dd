import { randomBytes } from 'node:crypto';
import { requireTeamRole } from '../../access/service.js';
import type { Database } from '../../db/client.js';
import { AppError } from '../../errors.js';
import type { SecretKeyRing } from '../../secrets/key-ring.js';
import { findOutboundSecret, insertOutboundSecretIfMissing, rotateOutboundSecret, type SigningSecretsRow } from './outbound-secret-repository.js';

// The team's outbound webhook secret: what its run callbacks are signed with (Standard Webhooks,
// protocols.md). Made on first use, sealed at rest with SECRETS_KEY; after a rotation the previous
// one signs alongside for 24 h, so receivers can switch without losing a delivery.

export const SECRET_OVERLAP_MS = 24 * 60 * 60 * 1000;
const SECRET_BYTES = 32;
const ADMIN_ROLES = ['owner', 'admin'] as const;

/** Authenticated data of the sealed value: a secret copied into another team's row does not open. */
const sealContext = (teamId: string) => `team_outbound_webhook_secrets:${teamId}`;

export const newOutboundSecret = (): string => `whsec_${randomBytes(SECRET_BYTES).toString('base64')}`;

const requireSealingKey = (secrets: SecretKeyRing) => {
  if (!secrets.currentKeyId) {
    throw new AppError(503, 'secrets_key_missing', 'SECRETS_KEY is not configured on this server, so webhook secrets cannot be stored; ask the operator to set it');
  }
};

/**
 * The secrets a delivery is signed with now: the current one first, then the previous one while
 * its overlap lasts. A team without one gets it here (its first callback). `stored`: the row when
 * the caller has read it already (a delivery reads it with its event, in one round trip).
 */
export async function signingSecretsOf(
  db: Database, secrets: SecretKeyRing, teamId: string, options: { now?: Date; stored?: SigningSecretsRow } = {},
): Promise<string[]> {
  const now = options.now ?? new Date();
  let row: SigningSecretsRow | undefined = options.stored ?? await findOutboundSecret(db, teamId);
  if (!row) {
    requireSealingKey(secrets);
    await insertOutboundSecretIfMissing(db, teamId, secrets.seal(newOutboundSecret(), sealContext(teamId)));
    row = await findOutboundSecret(db, teamId);
    if (!row) throw new Error(`team ${teamId} has no outbound webhook secret (the team is gone?)`);
  }
  const current = secrets.open(row.secret_sealed, sealContext(teamId));
  const previousLive = row.previous_secret_sealed && row.previous_expires_at && row.previous_expires_at > now;
  return previousLive ? [current, secrets.open(row.previous_secret_sealed!, sealContext(teamId))] : [current];
}

/** `POST /teams/:teamId/outbound-webhook-secret`: team owners and admins; the new secret is shown once. */
export async function rotateTeamOutboundSecret(
  db: Database, secrets: SecretKeyRing, userId: string, teamId: string, now = new Date(),
): Promise<{ secret: string; previousExpiresAt: string | null }> {
  await requireTeamRole(db, teamId, userId, ADMIN_ROLES, 'rotate the outbound webhook secret');
  requireSealingKey(secrets);
  const had = await findOutboundSecret(db, teamId);
  const secret = newOutboundSecret();
  const previousExpiresAt = new Date(now.getTime() + SECRET_OVERLAP_MS);
  await rotateOutboundSecret(db, teamId, secrets.seal(secret, sealContext(teamId)), previousExpiresAt);
  return { secret, previousExpiresAt: had ? previousExpiresAt.toISOString() : null };
}
