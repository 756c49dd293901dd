import type { Updateable } from 'kysely';
import type { Database } from '../../db/client.js';
import type { OAuthAppsTable, OAuthClientsTable, OAuthReviewStatus } from '../../db/types.js';

// Kysely queries of OAuth app management (app-management.ts holds the rules). Inserts of apps and
// clients are repository.ts's, shared with the operator CLI.


/** A live (not deleted) app. */
export const findLiveApp = (db: Database, appId: string) =>
  db.selectFrom('oauth_apps').selectAll().where('id', '=', appId).where('deleted_at', 'is', null).executeTakeFirst();

/**
 * A live app with its row locked for the rest of the transaction: a change to it, and above all the
 * revocation of every token that comes with delete, offline or reject, waits for a token exchange
 * or refresh in flight (they share-lock the app, repository.ts) and the other way round.
 */
export const lockLiveApp = (db: Database, appId: string) =>
  // NO KEY UPDATE, as the UPDATE itself takes: inserts that merely reference the app (grants, codes)
  // are not held up, and the refresh's FOR SHARE still waits.
  db.selectFrom('oauth_apps').selectAll().where('id', '=', appId).where('deleted_at', 'is', null).forNoKeyUpdate().executeTakeFirst();

/** Live apps, newest first, optionally of one owner and/or one review status. */
export function listLiveApps(db: Database, filter: { ownerId?: string; reviewStatus?: OAuthReviewStatus; limit: number; offset: number }) {
  let query = db.selectFrom('oauth_apps').selectAll().where('deleted_at', 'is', null);
  if (filter.ownerId) query = query.where('owner_id', '=', filter.ownerId);
  if (filter.reviewStatus) query = query.where('review_status', '=', filter.reviewStatus);
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(filter.limit).offset(filter.offset).execute();
}

/** The clients of the apps that have not been removed. */
export const listClientsOfApps = (db: Database, appIds: readonly string[]) =>
  appIds.length === 0
    ? Promise.resolve([])
    : db.selectFrom('oauth_clients').selectAll().where('app_id', 'in', appIds).where('deleted_at', 'is', null)
      .orderBy('created_at').orderBy('id').execute();

export const updateApp = (db: Database, appId: string, patch: Updateable<OAuthAppsTable>) =>
  db.updateTable('oauth_apps').set(patch).where('id', '=', appId).returningAll().executeTakeFirstOrThrow();

export const updateClient = (db: Database, clientPk: string, patch: Updateable<OAuthClientsTable>) =>
  db.updateTable('oauth_clients').set(patch).where('id', '=', clientPk).execute();

/**
 * Revokes every unrevoked grant and token of the app (all users, all clients) at `now`; returns the
 * tokens it revoked so the caller can count the ones that were still usable.
 */
export async function revokeAppTokens(db: Database, appId: string, now: Date) {
  // Tokens before grants, the order a user's own revocation (revokeUserAppTokens) takes its locks in.
  const revoked = await db.updateTable('oauth_tokens').set({ revoked_at: now })
    .where('app_id', '=', appId).where('revoked_at', 'is', null)
    .returning(['kind', 'expires_at', 'used_at'])
    .execute();
  await db.updateTable('oauth_grants').set({ revoked_at: now }).where('app_id', '=', appId).where('revoked_at', 'is', null).execute();
  return revoked;
}

/**
 * Removes one client (marks it deleted) and revokes every unrevoked grant and token it issued at
 * `now`; returns the tokens it revoked so the caller can count the ones that were still usable.
 */
export async function removeClientAndRevoke(db: Database, clientPk: string, now: Date) {
  await db.updateTable('oauth_clients').set({ deleted_at: now }).where('id', '=', clientPk).execute();
  // Tokens before grants, as revokeAppTokens.
  const revoked = await db.updateTable('oauth_tokens').set({ revoked_at: now })
    .where('client_pk', '=', clientPk).where('revoked_at', 'is', null)
    .returning(['kind', 'expires_at', 'used_at'])
    .execute();
  await db.updateTable('oauth_grants').set({ revoked_at: now }).where('client_pk', '=', clientPk).where('revoked_at', 'is', null).execute();
  return revoked;
}
