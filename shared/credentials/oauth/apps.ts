import type { Database } from '../../db/client.js';
import type { OAuthPlatform } from '../../db/types.js';
import { randomBase64Url } from '../../crypto.js';
import { AppError, notFound } from '../../errors.js';
import { newId } from '../../ids.js';
import { findUserById } from '../../identity/repository.js';
import * as repo from './repository.js';
import { isKnownScope, redirectUriProblem } from './rules.js';

// OAuth apps and their clients: registration, review and the administrator's switches.

export interface NewClient { platform: OAuthPlatform; redirectUris: string[]; scopes: string[] }

/** A client's redirect URIs and scopes are ones it may register (400 otherwise). */
export function checkClient(client: NewClient): void {
  if (client.redirectUris.length === 0) throw new AppError(400, 'invalid_request', 'At least one redirect URI is required');
  for (const uri of client.redirectUris) {
    const problem = redirectUriProblem(uri, client.platform);
    if (problem) throw new AppError(400, 'invalid_request', `Redirect URI ${uri} ${problem}`);
  }
  requireKnownScopes(client.scopes);
}

/** At least one scope, each one the service knows (400 otherwise). */
export function requireKnownScopes(scopes: readonly string[]): void {
  if (scopes.length === 0) throw new AppError(400, 'invalid_request', 'At least one scope is required');
  const unknown = scopes.filter((s) => !isKnownScope(s));
  if (unknown.length) throw new AppError(400, 'invalid_scope', `Unknown scope(s): ${unknown.join(', ')}`);
}

export const newClientId = () => `wfc-${randomBase64Url(18)}`;

/**
 * An app owned by a user with its first client. Apps are private to their author until approved;
 * `reserved` marks an official app only platform administrators may edit or delete.
 */
export async function createOAuthApp(
  db: Database,
  input: { ownerId: string; name: string; logoUrl?: string | null; reviewStatus?: 'private' | 'approved'; reserved?: boolean; client: NewClient },
): Promise<{ appId: string; clientId: string }> {
  const name = input.name.trim();
  if (!name || name.length > 100) throw new AppError(400, 'invalid_request', 'App name must be 1 to 100 characters');
  checkClient(input.client);
  return db.transaction().execute(async (trx) => {
    if (!(await findUserById(trx, input.ownerId))) throw notFound(`User ${input.ownerId}`);
    const app = await repo.insertApp(trx, {
      id: newId(), owner_id: input.ownerId, name, logo_url: input.logoUrl ?? null, review_status: input.reviewStatus ?? 'private',
      reserved: input.reserved ?? false,
    });
    const client = await repo.insertClient(trx, {
      id: newId(), app_id: app.id, client_id: newClientId(), platform: input.client.platform,
      redirect_uris: input.client.redirectUris, allowed_scopes: [...new Set(input.client.scopes)],
    });
    return { appId: app.id, clientId: client.client_id };
  });
}

/** Another independent client id (web, desktop, mobile) of the same app. */
export async function addOAuthClient(db: Database, appId: string, client: NewClient): Promise<{ clientId: string }> {
  checkClient(client);
  const app = await repo.findApp(db, appId);
  if (!app || app.deleted_at) throw notFound(`OAuth app ${appId}`);
  const row = await repo.insertClient(db, {
    id: newId(), app_id: appId, client_id: newClientId(), platform: client.platform,
    redirect_uris: client.redirectUris, allowed_scopes: [...new Set(client.scopes)],
  });
  return { clientId: row.client_id };
}

/** An administrator forcing the app offline: every token stops working at once (§3.5). */
export const disableOAuthApp = (db: Database, appId: string) => repo.setAppDisabled(db, appId, new Date());
export const enableOAuthApp = (db: Database, appId: string) => repo.setAppDisabled(db, appId, null);
/** The developer deleting the app: every token stops working at once, and it leaves users' lists. */
export const deleteOAuthApp = (db: Database, appId: string) => repo.setAppDeleted(db, appId);
export const approveOAuthApp = (db: Database, appId: string) => repo.setAppReviewStatus(db, appId, 'approved');
