import type { Database } from '../../db/client.js';
import * as repo from './repository.js';
import { effectiveScopes } from './rules.js';

// The user's own authorizations (§4.4, item shape §2.8).

export interface OAuthAuthorizationItem {
  app_id: string;
  app_name: string;
  app_logo_url: string | null;
  scopes: string[];
  authorized_at: string;
  active_token_count: number;
}

/**
 * One item per app the user holds a live token for (deleted apps hidden, disabled apps shown).
 * `active_token_count` counts live access tokens; an app kept only by a live refresh token still
 * shows (count 0) so the user can revoke it. Scopes are the union over the live tokens of what each
 * may still do (its scopes its client still has, as the authenticator counts them).
 */
export async function listOAuthAuthorizations(db: Database, userId: string): Promise<OAuthAuthorizationItem[]> {
  const rows = await repo.listLiveTokensOfUser(db, userId, new Date());
  const byApp = new Map<string, OAuthAuthorizationItem & { scopeSet: Set<string> }>();
  for (const row of rows) {
    let item = byApp.get(row.app_id);
    if (!item) {
      item = {
        app_id: row.app_id, app_name: row.app_name, app_logo_url: row.app_logo_url, scopes: [],
        authorized_at: row.created_at.toISOString(), active_token_count: 0, scopeSet: new Set(),
      };
      byApp.set(row.app_id, item);
    }
    if (row.created_at.toISOString() > item.authorized_at) item.authorized_at = row.created_at.toISOString();
    if (row.kind === 'access') item.active_token_count += 1;
    for (const scope of effectiveScopes(row.scopes, row.client_scopes)) item.scopeSet.add(scope);
  }
  return [...byApp.values()]
    .sort((a, b) => b.authorized_at.localeCompare(a.authorized_at))
    .map(({ scopeSet, ...item }) => ({ ...item, scopes: [...scopeSet].sort() }));
}

/**
 * Revokes every token and grant the user holds for the app (strictly by user and app), so nothing
 * can be refreshed afterwards. `revokedCount` counts the access tokens that were still active.
 */
export async function revokeOAuthAuthorization(db: Database, userId: string, appId: string): Promise<{ revokedCount: number }> {
  const now = new Date();
  const revoked = await db.transaction().execute((trx) => repo.revokeUserAppTokens(trx, userId, appId, now));
  const revokedCount = revoked.filter((t) => t.kind === 'access' && t.expires_at.getTime() > now.getTime()).length;
  return { revokedCount };
}
