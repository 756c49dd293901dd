import type { Database } from '../../db/client.js';
import type { OAuthPlatform } from '../../db/types.js';
import { randomBase64Url, sha256Hex } from '../../crypto.js';
import { AppError, notFound } from '../../errors.js';
import { newId } from '../../ids.js';
import { findUserById } from '../../identity/repository.js';
import { generateToken, hasValidTokenShape, tokenPrefixes } from '../tokens.js';
import * as repo from './repository.js';
import {
  ACCESS_TOKEN_TTL_SECONDS, CODE_TTL_SECONDS, REFRESH_TOKEN_TTL_SECONDS, formatScope, isKnownScope, isRegisteredRedirectUri,
  isSubset, isValidS256Challenge, mayAuthorizeApp, parseScope, redirectUriProblem, verifierMatchesChallenge, type AuthorizeParams,
} from './rules.js';

/** An RFC 6749 protocol error: `code` is the standard error code, rendered as `{ error, error_description }`. */
export class OAuthError extends Error {
  constructor(readonly code: string, readonly description: string, readonly status = 400) {
    super(description);
    this.name = 'OAuthError';
  }
}

const invalidGrant = (description: string) => new OAuthError('invalid_grant', description);

export interface TokenSet {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

// ─── Apps and clients ─────────────────────────────────────────────────────────

export interface NewClient { platform: OAuthPlatform; redirectUris: string[]; scopes: string[] }

function checkClient(client: NewClient): void {
  if (client.redirectUris.length === 0) throw new AppError(400, 'invalid_request', 'At least one redirect URI is required');
  for (const uri of client.redirectUris) {
    const problem = redirectUriProblem(uri, client.platform);
    if (problem) throw new AppError(400, 'invalid_request', `Redirect URI ${uri} ${problem}`);
  }
  if (client.scopes.length === 0) throw new AppError(400, 'invalid_request', 'At least one scope is required');
  const unknown = client.scopes.filter((s) => !isKnownScope(s));
  if (unknown.length) throw new AppError(400, 'invalid_scope', `Unknown scope(s): ${unknown.join(', ')}`);
}

const newClientId = () => `wfc-${randomBase64Url(18)}`;

/** An app owned by a user with its first client. Apps are private to their author until approved. */
export async function createOAuthApp(
  db: Database,
  input: { ownerId: string; name: string; logoUrl?: string | null; reviewStatus?: 'private' | 'approved'; client: NewClient },
): Promise<{ appId: string; clientId: string }> {
  const name = input.name.trim();
  if (!name || name.length > 100) throw new AppError(400, 'invalid_request', 'App name must be 1 to 100 characters');
  checkClient(input.client);
  return db.transaction().execute(async (trx) => {
    if (!(await findUserById(trx, input.ownerId))) throw notFound(`User ${input.ownerId}`);
    const app = await repo.insertApp(trx, {
      id: newId(), owner_id: input.ownerId, name, logo_url: input.logoUrl ?? null, review_status: input.reviewStatus ?? 'private',
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

// ─── Authorization endpoint ───────────────────────────────────────────────────

export type AuthorizeClient = NonNullable<Awaited<ReturnType<typeof repo.findClientWithApp>>>;

export type AuthorizeCheck =
  /** Shown to the user, never redirected: the redirect URI is not trusted yet. */
  | { outcome: 'fatal'; error: string; description: string }
  /** Sent back to the (validated) redirect URI per RFC 6749 §4.1.2.1. */
  | { outcome: 'redirect'; redirectUri: string; state: string; error: string; description: string }
  | { outcome: 'ok'; client: AuthorizeClient; params: AuthorizeParams; scopes: string[] };

/** Validates an authorize request in the order RFC 6749 §4.1.2.1 requires. */
export async function checkAuthorizeRequest(db: Database, query: Partial<Record<keyof AuthorizeParams, string>>): Promise<AuthorizeCheck> {
  const clientId = query.client_id ?? '';
  if (!clientId) return { outcome: 'fatal', error: 'invalid_request', description: 'client_id is required' };
  const client = clientId.length <= 200 ? await repo.findClientWithApp(db, clientId) : undefined;
  if (!client || client.deleted_at) return { outcome: 'fatal', error: 'invalid_client', description: 'Unknown client_id' };
  const redirectUri = query.redirect_uri ?? '';
  if (!redirectUri) return { outcome: 'fatal', error: 'invalid_request', description: 'redirect_uri is required' };
  if (!isRegisteredRedirectUri(client.redirect_uris, redirectUri)) {
    return { outcome: 'fatal', error: 'invalid_request', description: 'redirect_uri is not registered for this client' };
  }
  const state = query.state ?? '';
  const fail = (error: string, description: string): AuthorizeCheck => ({ outcome: 'redirect', redirectUri, state, error, description });
  if (client.disabled_at) return fail('access_denied', 'This app has been disabled');
  if (query.response_type !== 'code') return fail('unsupported_response_type', 'Only response_type=code is supported');
  if (!query.code_challenge) return fail('invalid_request', 'code_challenge is required (PKCE)');
  if (query.code_challenge_method !== 'S256') return fail('invalid_request', 'code_challenge_method must be S256');
  if (!isValidS256Challenge(query.code_challenge)) return fail('invalid_request', 'code_challenge is not a valid S256 challenge');
  const scopes = parseScope(query.scope);
  if (scopes.length === 0) return fail('invalid_scope', 'scope is required');
  if (!isSubset(scopes, client.allowed_scopes)) return fail('invalid_scope', 'scope exceeds what this client may request');
  return {
    outcome: 'ok', client, scopes,
    params: {
      client_id: clientId, redirect_uri: redirectUri, response_type: 'code', scope: query.scope ?? '', state,
      code_challenge: query.code_challenge, code_challenge_method: 'S256',
    },
  };
}

/** The user approved: a grant and a one-time code (only its hash is stored), bound to client, redirect URI and challenge. */
export async function approveAuthorization(
  db: Database,
  input: { client: AuthorizeClient; userId: string; scopes: string[]; redirectUri: string; codeChallenge: string },
): Promise<{ code: string }> {
  if (!mayAuthorizeApp(input.client, input.userId)) throw new OAuthError('access_denied', 'This app is private to its author until it is reviewed');
  const code = randomBase64Url(32);
  await db.transaction().execute(async (trx) => {
    const grant = await repo.insertGrant(trx, {
      id: newId(), client_pk: input.client.client_pk, app_id: input.client.app_id, user_id: input.userId, scopes: input.scopes,
    });
    await repo.insertCode(trx, {
      code_hash: sha256Hex(code), grant_id: grant.id, redirect_uri: input.redirectUri, code_challenge: input.codeChallenge,
      expires_at: new Date(Date.now() + CODE_TTL_SECONDS * 1000),
    });
  });
  return { code };
}

// ─── Token endpoint ───────────────────────────────────────────────────────────

async function requireClient(db: Database, clientId: string | undefined): Promise<AuthorizeClient> {
  if (!clientId) throw new OAuthError('invalid_request', 'client_id is required');
  const client = clientId.length <= 200 ? await repo.findClientWithApp(db, clientId) : undefined;
  if (!client) throw new OAuthError('invalid_client', 'Unknown client_id', 401);
  return client;
}

async function issuePair(
  db: Database,
  grant: { grantId: string; clientPk: string; appId: string; userId: string; scopes: string[]; refreshScopes?: string[] },
  accessTtlSeconds = ACCESS_TOKEN_TTL_SECONDS,
): Promise<TokenSet> {
  const access = generateToken('oauthAccess');
  const refresh = generateToken('oauthRefresh');
  const now = Date.now();
  const common = { grant_id: grant.grantId, client_pk: grant.clientPk, app_id: grant.appId, user_id: grant.userId };
  await repo.insertTokens(db, [
    { id: newId(), ...common, kind: 'access', token_hash: sha256Hex(access), scopes: grant.scopes, expires_at: new Date(now + accessTtlSeconds * 1000) },
    { id: newId(), ...common, kind: 'refresh', token_hash: sha256Hex(refresh), scopes: grant.refreshScopes ?? grant.scopes, expires_at: new Date(now + REFRESH_TOKEN_TTL_SECONDS * 1000) },
  ]);
  return { access_token: access, token_type: 'Bearer', expires_in: accessTtlSeconds, refresh_token: refresh, scope: formatScope(grant.scopes) };
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
    await repo.markCodeUsed(trx, row.code_hash);
    return issuePair(trx, { grantId: row.grant_id, clientPk: row.client_pk, appId: row.app_id, userId: row.user_id, scopes: row.scopes });
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
    const requested = parseScope(input.scope);
    if (requested.length && !isSubset(requested, row.scopes)) return new OAuthError('invalid_scope', 'scope exceeds the original grant');
    await repo.markTokenUsed(trx, row.id);
    return issuePair(trx, {
      grantId: row.grant_id, clientPk: row.client_pk, appId: row.app_id, userId: row.user_id,
      scopes: requested.length ? requested : row.scopes, refreshScopes: row.scopes,
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

// ─── Operator CLI ─────────────────────────────────────────────────────────────

/** Issues a token pair without the browser flow (operator CLI), on a new grant for the app's first client. */
export async function issueTokensByOperator(
  db: Database,
  input: { appId: string; userId: string; scopes: string[]; ttlSeconds?: number },
): Promise<{ accessToken: string; refreshToken: string; expiresIn: number }> {
  if (input.scopes.length === 0) throw new AppError(400, 'invalid_request', 'At least one scope is required');
  const unknown = input.scopes.filter((s) => !isKnownScope(s));
  if (unknown.length) throw new AppError(400, 'invalid_scope', `Unknown scope(s): ${unknown.join(', ')}`);
  return db.transaction().execute(async (trx) => {
    const app = await repo.findApp(trx, input.appId);
    if (!app || app.deleted_at) throw notFound(`OAuth app ${input.appId}`);
    if (app.disabled_at) throw new AppError(409, 'app_disabled', `OAuth app ${input.appId} is disabled`);
    if (!(await findUserById(trx, input.userId))) throw notFound(`User ${input.userId}`);
    const client = await repo.findFirstClientOfApp(trx, app.id);
    if (!client) throw notFound(`A client of OAuth app ${input.appId}`);
    const grant = await repo.insertGrant(trx, { id: newId(), client_pk: client.id, app_id: app.id, user_id: input.userId, scopes: input.scopes });
    const set = await issuePair(trx, { grantId: grant.id, clientPk: client.id, appId: app.id, userId: input.userId, scopes: input.scopes },
      input.ttlSeconds ?? ACCESS_TOKEN_TTL_SECONDS);
    return { accessToken: set.access_token, refreshToken: set.refresh_token, expiresIn: set.expires_in };
  });
}

// ─── The user's own authorizations (§4.4, item shape §2.8) ────────────────────

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
 * shows (count 0) so the user can revoke it. Scopes are the union over the live tokens.
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
    for (const scope of row.scopes) item.scopeSet.add(scope);
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

// ─── Userinfo and docs-site cookie ────────────────────────────────────────────

export async function userInfo(db: Database, userId: string): Promise<{ sub: string; email: string; name: string | null }> {
  const user = await repo.findUserProfile(db, userId);
  if (!user) throw new AppError(401, 'Invalid or revoked OAuth token');
  return { sub: user.id, email: user.email, name: user.name };
}

/**
 * §4.6 checks 4–6: the access token exists, is live, its app is neither disabled nor deleted, and it
 * was issued to the docs site's client. Returns its expiry, or null.
 */
export async function findDocsSessionTokenExpiry(db: Database, accessToken: string, docsClientId: string): Promise<Date | null> {
  if (!hasValidTokenShape('oauthAccess', accessToken)) return null;
  const row = await repo.findTokenByHash(db, sha256Hex(accessToken));
  if (!row || row.kind !== 'access' || row.revoked_at || row.grant_revoked_at) return null;
  if (row.expires_at.getTime() <= Date.now()) return null;
  if (row.disabled_at || row.deleted_at) return null;
  if (row.client_id !== docsClientId) return null;
  return row.expires_at;
}
