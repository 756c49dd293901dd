import type { Insertable } from 'kysely';
import type { Database } from '../../db/client.js';
import type { OAuthAppsTable, OAuthClientsTable, OAuthCodesTable, OAuthGrantsTable, OAuthTokensTable } from '../../db/types.js';

/** Kysely queries for the OAuth tables; rules and orchestration live in rules.ts and service.ts. */

export const insertApp = (db: Database, app: Insertable<OAuthAppsTable>) =>
  db.insertInto('oauth_apps').values(app).returningAll().executeTakeFirstOrThrow();

export const insertClient = (db: Database, client: Insertable<OAuthClientsTable>) =>
  db.insertInto('oauth_clients').values(client).returningAll().executeTakeFirstOrThrow();

export const findApp = (db: Database, appId: string) =>
  db.selectFrom('oauth_apps').selectAll().where('id', '=', appId).executeTakeFirst();

export const findFirstClientOfApp = (db: Database, appId: string) =>
  db.selectFrom('oauth_clients').selectAll().where('app_id', '=', appId).where('deleted_at', 'is', null)
    .orderBy('created_at').orderBy('id').limit(1).executeTakeFirst();

export const setAppDisabled = (db: Database, appId: string, at: Date | null) =>
  db.updateTable('oauth_apps').set({ disabled_at: at }).where('id', '=', appId).executeTakeFirst();

export const setAppDeleted = (db: Database, appId: string) =>
  db.updateTable('oauth_apps').set({ deleted_at: new Date() }).where('id', '=', appId).where('deleted_at', 'is', null).executeTakeFirst();

export const setAppReviewStatus = (db: Database, appId: string, status: 'private' | 'approved') =>
  db.updateTable('oauth_apps').set({ review_status: status }).where('id', '=', appId).executeTakeFirst();

/** A client (not removed from its app) and the app it belongs to, by public client id. */
export const findClientWithApp = (db: Database, clientId: string) =>
  db.selectFrom('oauth_clients as c')
    .innerJoin('oauth_apps as a', 'a.id', 'c.app_id')
    .select(['c.id as client_pk', 'c.client_id', 'c.platform', 'c.redirect_uris', 'c.allowed_scopes',
      'a.id as app_id', 'a.name as app_name', 'a.logo_url', 'a.owner_id', 'a.review_status', 'a.disabled_at', 'a.deleted_at'])
    .where('c.client_id', '=', clientId)
    .where('c.deleted_at', 'is', null)
    .executeTakeFirst();

export const insertGrant = (db: Database, grant: Insertable<OAuthGrantsTable>) =>
  db.insertInto('oauth_grants').values(grant).returningAll().executeTakeFirstOrThrow();

export const insertCode = (db: Database, code: Insertable<OAuthCodesTable>) =>
  db.insertInto('oauth_codes').values(code).execute();

/**
 * Share-locks the app first, so an exchange or refresh and the app's delete, offline or rejection
 * (which take the app's row lock before revoking every token) serialise in one order: either the
 * tokens are issued first and then revoked, or the exchange sees the app retired. Without it a
 * refresh in flight could insert tokens the revocation's snapshot never sees.
 */
const shareLockAppOf = (db: Database, appIdOf: 'code' | 'token', hash: string) =>
  db.selectFrom('oauth_apps').select('id')
    .where('id', '=', appIdOf === 'token'
      ? db.selectFrom('oauth_tokens').select('app_id').where('token_hash', '=', hash)
      : db.selectFrom('oauth_codes as o').innerJoin('oauth_grants as g', 'g.id', 'o.grant_id').select('g.app_id').where('o.code_hash', '=', hash))
    .forShare()
    .execute();

/** A code with its grant, client and app state, locked so that two exchanges of one code serialise. */
export async function lockCode(db: Database, codeHash: string) {
  await shareLockAppOf(db, 'code', codeHash);
  return db.selectFrom('oauth_codes as o')
    .innerJoin('oauth_grants as g', 'g.id', 'o.grant_id')
    .innerJoin('oauth_apps as a', 'a.id', 'g.app_id')
    .innerJoin('oauth_clients as c', 'c.id', 'g.client_pk')
    .select(['o.code_hash', 'o.grant_id', 'o.redirect_uri', 'o.code_challenge', 'o.expires_at', 'o.used_at',
      'g.client_pk', 'g.app_id', 'g.user_id', 'g.scopes', 'g.revoked_at as grant_revoked_at', 'a.disabled_at', 'a.deleted_at',
      'c.allowed_scopes as client_scopes'])
    .where('o.code_hash', '=', codeHash)
    .forUpdate('o')
    .executeTakeFirst();
}

export const markCodeUsed = (db: Database, codeHash: string) =>
  db.updateTable('oauth_codes').set({ used_at: new Date() }).where('code_hash', '=', codeHash).execute();

export const insertTokens = (db: Database, tokens: Insertable<OAuthTokensTable>[]) =>
  db.insertInto('oauth_tokens').values(tokens).execute();

/**
 * A token (by hash) with its grant, client and app state; `lock` takes a row lock for rotation (after
 * a share lock on its app, see shareLockAppOf).
 */
export async function findTokenByHash(db: Database, tokenHash: string, options: { lock?: boolean } = {}) {
  if (options.lock) await shareLockAppOf(db, 'token', tokenHash);
  const query = db.selectFrom('oauth_tokens as t')
    .innerJoin('oauth_grants as g', 'g.id', 't.grant_id')
    .innerJoin('oauth_clients as c', 'c.id', 't.client_pk')
    .innerJoin('oauth_apps as a', 'a.id', 't.app_id')
    .select(['t.id', 't.kind', 't.grant_id', 't.client_pk', 't.app_id', 't.user_id', 't.scopes', 't.expires_at', 't.used_at', 't.revoked_at',
      'g.revoked_at as grant_revoked_at', 'c.client_id', 'c.allowed_scopes as client_scopes', 'c.deleted_at as client_deleted_at',
      'a.disabled_at', 'a.deleted_at'])
    .where('t.token_hash', '=', tokenHash);
  return (options.lock ? query.forUpdate('t') : query).executeTakeFirst();
}

export const markTokenUsed = (db: Database, tokenId: string) =>
  db.updateTable('oauth_tokens').set({ used_at: new Date() }).where('id', '=', tokenId).execute();

export const revokeToken = (db: Database, tokenId: string) =>
  db.updateTable('oauth_tokens').set({ revoked_at: new Date() }).where('id', '=', tokenId).where('revoked_at', 'is', null).execute();

/** Revokes a grant and every token it issued (code reuse, refresh replay, refresh-token revocation). */
export async function revokeGrant(db: Database, grantId: string): Promise<void> {
  const now = new Date();
  await db.updateTable('oauth_grants').set({ revoked_at: now }).where('id', '=', grantId).where('revoked_at', 'is', null).execute();
  await db.updateTable('oauth_tokens').set({ revoked_at: now }).where('grant_id', '=', grantId).where('revoked_at', 'is', null).execute();
}

/**
 * The caller's live tokens (not revoked, not expired, refresh tokens not yet rotated, grant not
 * revoked) of apps that are not deleted, with the app's display fields.
 */
export const listLiveTokensOfUser = (db: Database, userId: string, now: Date) =>
  db.selectFrom('oauth_tokens as t')
    .innerJoin('oauth_grants as g', 'g.id', 't.grant_id')
    .innerJoin('oauth_apps as a', 'a.id', 't.app_id')
    .innerJoin('oauth_clients as c', 'c.id', 't.client_pk')
    .select(['t.app_id', 't.kind', 't.scopes', 't.created_at', 'a.name as app_name', 'a.logo_url as app_logo_url', 'c.allowed_scopes as client_scopes'])
    .where('t.user_id', '=', userId)
    .where('a.deleted_at', 'is', null)
    .where('t.revoked_at', 'is', null)
    .where('g.revoked_at', 'is', null)
    .where('t.used_at', 'is', null)
    .where('t.expires_at', '>', now)
    .orderBy('t.created_at', 'desc')
    .execute();

/**
 * Revokes every unrevoked token and grant of one user for one app (strictly both filters);
 * returns the tokens that were revoked with their kind and whether they were still live.
 */
export async function revokeUserAppTokens(db: Database, userId: string, appId: string, now: Date) {
  const revoked = await db.updateTable('oauth_tokens')
    .set({ revoked_at: now })
    .where('user_id', '=', userId)
    .where('app_id', '=', appId)
    .where('revoked_at', 'is', null)
    .returning(['id', 'kind', 'expires_at', 'used_at', 'grant_id'])
    .execute();
  await db.updateTable('oauth_grants').set({ revoked_at: now })
    .where('user_id', '=', userId).where('app_id', '=', appId).where('revoked_at', 'is', null)
    .execute();
  return revoked;
}

export const findUserProfile = (db: Database, userId: string) =>
  db.selectFrom('users').select(['id', 'email', 'name']).where('id', '=', userId).executeTakeFirst();
