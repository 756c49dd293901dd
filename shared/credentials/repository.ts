import { sql } from 'kysely';
import type { Database } from '../db/client.js';

export const insertApiKey = (
  db: Database,
  key: { id: string; team_id: string; created_by: string; name: string; description: string | null; key_hash: string; limit_credits: number | null },
) => db.insertInto('api_keys').values(key).returning(['id', 'team_id', 'name']).executeTakeFirstOrThrow();

export const findLiveApiKeyByHash = (db: Database, keyHash: string) =>
  db.selectFrom('api_keys').selectAll()
    .where('key_hash', '=', keyHash).where('deleted_at', 'is', null)
    .executeTakeFirst();

export const listLiveApiKeys = (db: Database, teamId: string) =>
  db.selectFrom('api_keys')
    .select(['id', 'name', 'description', 'limit_credits', 'usage_credits', 'created_by', 'created_at', 'last_used_at'])
    .where('team_id', '=', teamId).where('deleted_at', 'is', null)
    .orderBy('created_at', 'desc').execute();

/** Soft delete of a live key of the team; whether there was one. */
export async function softDeleteApiKey(db: Database, teamId: string, keyId: string): Promise<boolean> {
  const result = await db.updateTable('api_keys').set({ deleted_at: sql<Date>`now()` as never })
    .where('id', '=', keyId).where('team_id', '=', teamId).where('deleted_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}
