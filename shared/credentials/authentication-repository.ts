import { executePrepared, type Database } from '../db/client.js';

// Kysely queries only: one lookup per credential kind, each by sha256(token) (or by user id for an
// IdP JWT). Which rows are usable and the 401s live in authenticate.ts.

/** Every run request starts here: a prepared statement. */
export async function findApiKeyByHash(db: Database, keyHash: string) {
  const [row] = await executePrepared(db, 'authenticate_api_key', db.selectFrom('api_keys')
    .innerJoin('teams', 'teams.id', 'api_keys.team_id')
    .select(['api_keys.id', 'api_keys.team_id', 'api_keys.created_by', 'api_keys.limit_credits', 'api_keys.usage_credits', 'api_keys.expires_at'])
    .where('api_keys.key_hash', '=', keyHash)
    .where('api_keys.deleted_at', 'is', null)
    .where('teams.deleted_at', 'is', null)
    .compile());
  return row;
}

/** With the client's current scopes and state, read in the same statement: a narrowed or removed client counts at once. */
export async function findOAuthAccessTokenByHash(db: Database, tokenHash: string) {
  return db.selectFrom('oauth_tokens as t')
    .innerJoin('oauth_grants as g', 'g.id', 't.grant_id')
    .innerJoin('oauth_apps as a', 'a.id', 't.app_id')
    .innerJoin('oauth_clients as c', 'c.id', 't.client_pk')
    .select(['t.id', 't.user_id', 't.app_id', 'c.client_id', 't.scopes', 't.expires_at', 't.revoked_at', 'g.revoked_at as grant_revoked_at', 'a.disabled_at', 'a.deleted_at',
      'c.allowed_scopes as client_scopes', 'c.deleted_at as client_deleted_at'])
    .where('t.token_hash', '=', tokenHash)
    .where('t.kind', '=', 'access')
    .executeTakeFirst();
}

export async function findLiveAgentBindingByHash(db: Database, tokenHash: string) {
  return db.selectFrom('agent_bindings as b')
    .innerJoin('agents as a', 'a.id', 'b.agent_id')
    .select(['b.id', 'b.agent_id', 'b.agent_user_id', 'b.owner_user_id', 'b.team_id', 'a.permissions'])
    .where('b.token_hash', '=', tokenHash)
    .where('b.deleted_at', 'is', null)
    .where('a.deleted_at', 'is', null)
    .executeTakeFirst();
}

export async function findUserForToken(db: Database, userId: string) {
  return db.selectFrom('users').select(['id', 'email', 'metadata']).where('id', '=', userId).executeTakeFirst();
}
