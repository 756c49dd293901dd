import type { Selectable } from 'kysely';
import type { Database } from '../../db/client.js';
import type { TeamOutboundWebhookSecretsTable } from '../../db/types.js';

export type OutboundSecretRow = Selectable<TeamOutboundWebhookSecretsTable>;
/** What signing reads of the row. */
export type SigningSecretsRow = Pick<OutboundSecretRow, 'secret_sealed' | 'previous_secret_sealed' | 'previous_expires_at'>;

export async function findOutboundSecret(db: Database, teamId: string): Promise<OutboundSecretRow | undefined> {
  return db.selectFrom('team_outbound_webhook_secrets').selectAll().where('team_id', '=', teamId).executeTakeFirst();
}

/** The team's first secret; a concurrent first use that won keeps its own (the caller reads it back). */
export async function insertOutboundSecretIfMissing(db: Database, teamId: string, secretSealed: string): Promise<void> {
  await db.insertInto('team_outbound_webhook_secrets').values({ team_id: teamId, secret_sealed: secretSealed })
    .onConflict((oc) => oc.column('team_id').doNothing()).execute();
}

/**
 * A new current secret; the one it replaces keeps signing until `previousExpiresAt`. Rotating a team
 * without a secret yet just stores the new one.
 */
export async function rotateOutboundSecret(db: Database, teamId: string, secretSealed: string, previousExpiresAt: Date): Promise<void> {
  await db.insertInto('team_outbound_webhook_secrets').values({ team_id: teamId, secret_sealed: secretSealed })
    .onConflict((oc) => oc.column('team_id').doUpdateSet((eb) => ({
      secret_sealed: secretSealed,
      previous_secret_sealed: eb.ref('team_outbound_webhook_secrets.secret_sealed'),
      previous_expires_at: previousExpiresAt,
      rotated_at: new Date(),
    }))).execute();
}
