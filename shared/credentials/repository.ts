import type { Database } from '../db/client.js';

export const insertApiKey = (
  db: Database,
  key: { id: string; team_id: string; created_by: string; name: string; description: string | null; key_hash: string; limit_credits: number | null },
) => db.insertInto('api_keys').values(key).returning(['id', 'team_id', 'name']).executeTakeFirstOrThrow();

export const findLiveApiKeyByHash = (db: Database, keyHash: string) =>
  db.selectFrom('api_keys').selectAll()
    .where('key_hash', '=', keyHash).where('deleted_at', 'is', null)
    .executeTakeFirst();
