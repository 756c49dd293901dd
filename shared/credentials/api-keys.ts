import { isTeamMember, requireTeamRole } from '../access/service.js';
import type { Database } from '../db/client.js';
import { sha256Hex } from '../crypto.js';
import { AppError, notFound } from '../errors.js';
import { newId } from '../ids.js';
import { findActiveTeam } from '../identity/repository.js';
import { authMessages, type PrincipalOf } from './principal.js';
import { generateToken } from './tokens.js';
import { insertApiKey, listLiveApiKeys, softDeleteApiKey } from './repository.js';

/** Creates a team API key; the plaintext is returned here once and only its sha256 is stored. */
export async function createApiKey(
  db: Database,
  input: { teamId: string; createdBy: string; name: string; description?: string | null; limitCredits?: number | null },
): Promise<{ id: string; token: string }> {
  return db.transaction().execute(async (trx) => {
    const team = await findActiveTeam(trx, input.teamId);
    if (!team) throw notFound(`Team ${input.teamId}`);
    if (!(await isTeamMember(trx, input.teamId, input.createdBy))) throw new AppError(403, 'not_a_member', `User ${input.createdBy} is not a member of team ${input.teamId}`);
    const token = generateToken('apiKey');
    const row = await insertApiKey(trx, {
      id: newId(), team_id: input.teamId, created_by: input.createdBy, name: input.name,
      description: input.description ?? null, key_hash: sha256Hex(token), limit_credits: input.limitCredits ?? null,
    });
    return { id: row.id, token };
  });
}

export const listApiKeys = (db: Database, teamId: string) => listLiveApiKeys(db, teamId);

/** Soft delete (the `delete_api_key` RPC): the key stops working at once; usage history stays. */
export async function deleteApiKey(db: Database, teamId: string, keyId: string): Promise<void> {
  if (!(await softDeleteApiKey(db, teamId, keyId))) throw new AppError(404, 'API key not found');
}

/**
 * The team's key management for a signed-in user (spec §4.4): owners create and delete keys,
 * owners and admins list them; anyone else gets 404 (not in the team) or 403, as access decides.
 */
export const teamApiKeys = {
  async create(db: Database, userId: string, input: { teamId: string; name: string; description?: string | null; limitCredits?: number | null }) {
    await requireTeamRole(db, input.teamId, userId, ['owner'], 'create API keys');
    return createApiKey(db, { ...input, createdBy: userId });
  },
  async list(db: Database, userId: string, teamId: string) {
    await requireTeamRole(db, teamId, userId, ['owner', 'admin'], 'list API keys');
    return listApiKeys(db, teamId);
  },
  async delete(db: Database, userId: string, teamId: string, keyId: string) {
    await requireTeamRole(db, teamId, userId, ['owner'], 'delete API keys');
    await deleteApiKey(db, teamId, keyId);
  },
};

/** Quota, not a rate limit: a key whose usage reached its limit is refused until the limit changes. */
export function assertWithinCreditLimit(key: Pick<PrincipalOf<'api-key'>, 'limitCredits' | 'usageCredits'>): void {
  if (key.limitCredits !== null && key.usageCredits >= key.limitCredits) throw new AppError(403, authMessages.creditLimit);
}
