import type { Database } from '../../db/client.js';
import { sha256Hex } from '../../crypto.js';
import { hasValidTokenShape, tokenPrefixes } from '../tokens.js';
import type { AuthorizeClient } from './authorize.js';
import { OAuthError } from './errors.js';
import * as repo from './repository.js';
import { effectiveScopes, isSubset, parseScope, verifierMatchesChallenge } from './rules.js';
import { issueTokenPair, type TokenSet } from './token-pairs.js';

// The token endpoint (RFC 6749 §4.1.3, §6) and token revocation (RFC 7009).

const invalidGrant = (description: string) => new OAuthError('invalid_grant', description);
/** Every scope the user granted was since taken off the client: nothing is left to issue. */
const nothingLeft = () => invalidGrant('The client no longer has any of the authorized scopes');

async function requireClient(db: Database, clientId: string | undefined): Promise<AuthorizeClient> {
  if (!clientId) throw new OAuthError('invalid_request', 'client_id is required');
  const client = clientId.length <= 200 ? await repo.findClientWithApp(db, clientId) : undefined;
  if (!client) throw new OAuthError('invalid_client', 'Unknown client_id', 401);
  return client;
}

/** Runs `work` in a transaction that commits even when it ends in a protocol error (revocations must stick). */
async function committing<T>(db: Database, work: (trx: Database) => Promise<T | OAuthError>): Promise<T> {
  const result = await db.transaction().execute(work);
  if (result instanceof OAuthError) throw result;
  return result;
}

/** grant_type=authorization_code (RFC 6749 §4.1.3 with RFC 7636 §4.5). */
export async function exchangeAuthorizationCode(
  db: Database,
  input: { clientId?: string; code?: string; redirectUri?: string; codeVerifier?: string },
): Promise<TokenSet> {
  const client = await requireClient(db, input.clientId);
  if (!input.code) throw new OAuthError('invalid_request', 'code is required');
  if (!input.redirectUri) throw new OAuthError('invalid_request', 'redirect_uri is required');
  if (!input.codeVerifier) throw new OAuthError('invalid_request', 'code_verifier is required (PKCE)');
  const { code, redirectUri, codeVerifier } = input;
  return committing(db, async (trx) => {
    const row = await repo.lockCode(trx, sha256Hex(code));
    if (!row || row.client_pk !== client.client_pk) return invalidGrant('The authorization code is invalid');
    if (row.used_at) {
      // A second use means the code leaked: everything issued from it is withdrawn (RFC 6749 §4.1.2).
      await repo.revokeGrant(trx, row.grant_id);
      return invalidGrant('The authorization code was already used');
    }
    if (row.expires_at.getTime() <= Date.now()) return invalidGrant('The authorization code has expired');
    if (row.redirect_uri !== redirectUri) return invalidGrant('redirect_uri does not match the authorization request');
    if (!verifierMatchesChallenge(codeVerifier, row.code_challenge)) return invalidGrant('code_verifier does not match the code_challenge');
    if (row.grant_revoked_at || row.disabled_at || row.deleted_at) return invalidGrant('The authorization is no longer valid');
    const scopes = effectiveScopes(row.scopes, row.client_scopes);
    if (scopes.length === 0) return nothingLeft();
    await repo.markCodeUsed(trx, row.code_hash);
    return issueTokenPair(trx, { grantId: row.grant_id, clientPk: row.client_pk, appId: row.app_id, userId: row.user_id, scopes });
  });
}

/** grant_type=refresh_token with rotation: each refresh token works once; a replay revokes the grant. */
export async function refreshAccessToken(
  db: Database,
  input: { clientId?: string; refreshToken?: string; scope?: string },
): Promise<TokenSet> {
  const client = await requireClient(db, input.clientId);
  if (!input.refreshToken) throw new OAuthError('invalid_request', 'refresh_token is required');
  if (!hasValidTokenShape('oauthRefresh', input.refreshToken)) throw invalidGrant('The refresh token is invalid');
  const refreshToken = input.refreshToken;
  return committing(db, async (trx) => {
    const row = await repo.findTokenByHash(trx, sha256Hex(refreshToken), { lock: true });
    if (!row || row.kind !== 'refresh' || row.client_pk !== client.client_pk) return invalidGrant('The refresh token is invalid');
    if (row.revoked_at || row.grant_revoked_at) return invalidGrant('The refresh token has been revoked');
    if (row.used_at) {
      await repo.revokeGrant(trx, row.grant_id);
      return invalidGrant('The refresh token was already used; the authorization has been revoked');
    }
    if (row.expires_at.getTime() <= Date.now()) return invalidGrant('The refresh token has expired');
    if (row.disabled_at || row.deleted_at) return invalidGrant('The app has been disabled or deleted');
    // The client's current scopes, read after the app's share lock: a narrowing committed before
    // this refresh shows here, so the new pair (refresh token included) carries only what remains.
    const remaining = effectiveScopes(row.scopes, row.client_scopes);
    if (remaining.length === 0) return nothingLeft();
    const requested = parseScope(input.scope);
    if (requested.length && !isSubset(requested, remaining)) return new OAuthError('invalid_scope', 'scope exceeds what the grant and the client now allow');
    await repo.markTokenUsed(trx, row.id);
    return issueTokenPair(trx, {
      grantId: row.grant_id, clientPk: row.client_pk, appId: row.app_id, userId: row.user_id,
      scopes: requested.length ? requested : remaining, refreshScopes: remaining,
    });
  });
}

/**
 * RFC 7009. Unknown tokens and tokens of another client succeed without effect, so the endpoint
 * cannot be used to probe for tokens. A refresh token takes its whole grant with it.
 */
export async function revokeOAuthToken(db: Database, input: { clientId?: string; token?: string }): Promise<void> {
  const client = await requireClient(db, input.clientId);
  if (!input.token) throw new OAuthError('invalid_request', 'token is required');
  const token = input.token;
  const shaped = token.startsWith(tokenPrefixes.oauthAccess) ? hasValidTokenShape('oauthAccess', token)
    : token.startsWith(tokenPrefixes.oauthRefresh) ? hasValidTokenShape('oauthRefresh', token) : false;
  if (!shaped) return;
  await db.transaction().execute(async (trx) => {
    const row = await repo.findTokenByHash(trx, sha256Hex(token), { lock: true });
    if (!row || row.client_pk !== client.client_pk) return;
    if (row.kind === 'refresh') await repo.revokeGrant(trx, row.grant_id);
    else await repo.revokeToken(trx, row.id);
  });
}
