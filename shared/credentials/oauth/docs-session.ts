import type { Database } from '../../db/client.js';
import { sha256Hex } from '../../crypto.js';
import { hasValidTokenShape } from '../tokens.js';
import * as repo from './repository.js';

// The docs site's cookie is backed by an access token of its own OAuth client (§4.6).

/**
 * §4.6 checks 4–6: the access token exists, is live, its app is neither disabled nor deleted, and it
 * was issued to the docs site's client. Returns its expiry, or null.
 */
export async function findDocsSessionTokenExpiry(db: Database, accessToken: string, docsClientId: string): Promise<Date | null> {
  if (!hasValidTokenShape('oauthAccess', accessToken)) return null;
  const row = await repo.findTokenByHash(db, sha256Hex(accessToken));
  if (!row || row.kind !== 'access' || row.revoked_at || row.grant_revoked_at || row.client_deleted_at) return null;
  if (row.expires_at.getTime() <= Date.now()) return null;
  if (row.disabled_at || row.deleted_at) return null;
  if (row.client_id !== docsClientId) return null;
  return row.expires_at;
}
