import { decodeJwt } from 'jose';
import type { Database } from '../db/client.js';
import { sha256Hex } from '../crypto.js';
import { AppError } from '../errors.js';
import { isUuid } from '../ids.js';
import { findApiKeyByHash, findLiveAgentBindingByHash, findOAuthAccessTokenByHash, findUserForToken } from './authentication-repository.js';
import type { IdentityProvider } from './identity-provider.js';
import { effectiveScopes } from './oauth/rules.js';
import { authMessages, type Principal } from './principal.js';
import { SCHEDULE_TOKEN_ISSUER, type ScheduleTokens } from './schedule-tokens.js';
import { hasValidTokenShape, tokenPrefixes } from './tokens.js';

const unauthorized = (message: string) => new AppError(401, message);

export interface Authenticator {
  /** Resolves a presented token into a principal, or throws the 401 of spec §5.4. */
  authenticate(token: string): Promise<Principal>;
}

/**
 * One place that knows every credential kind. The prefix picks the kind; a bad checksum is refused
 * before any query; only sha256(token) is ever looked up.
 */
export function createAuthenticator(deps: { db: Database; idp: IdentityProvider; scheduleTokens: ScheduleTokens }): Authenticator {
  const { db } = deps;

  async function apiKey(token: string): Promise<Principal> {
    if (!hasValidTokenShape('apiKey', token)) throw unauthorized(authMessages.invalidApiKey);
    const row = await findApiKeyByHash(db, sha256Hex(token));
    // Creation accepts no expiry, but a row that has one is honoured (spec §5.1).
    if (!row || (row.expires_at && row.expires_at.getTime() <= Date.now())) throw unauthorized(authMessages.invalidApiKey);
    return { kind: 'api-key', apiKeyId: row.id, userId: row.created_by, teamId: row.team_id, limitCredits: row.limit_credits, usageCredits: row.usage_credits };
  }

  async function oauth(token: string): Promise<Principal> {
    if (!hasValidTokenShape('oauthAccess', token)) throw unauthorized(authMessages.invalidOAuth);
    const row = await findOAuthAccessTokenByHash(db, sha256Hex(token));
    if (!row || row.revoked_at || row.grant_revoked_at || row.disabled_at || row.deleted_at || row.client_deleted_at) throw unauthorized(authMessages.invalidOAuth);
    if (row.expires_at.getTime() <= Date.now()) throw unauthorized(authMessages.expiredOAuth);
    return {
      kind: 'oauth', tokenId: row.id, userId: row.user_id, appId: row.app_id, clientId: row.client_id,
      scopes: effectiveScopes(row.scopes, row.client_scopes), expiresAt: row.expires_at,
    };
  }

  async function agent(token: string): Promise<Principal> {
    if (!hasValidTokenShape('agent', token)) throw unauthorized(authMessages.invalidToken);
    const row = await findLiveAgentBindingByHash(db, sha256Hex(token));
    if (!row) throw unauthorized(authMessages.invalidToken);
    return { kind: 'agent', bindingId: row.id, agentId: row.agent_id, userId: row.agent_user_id, ownerUserId: row.owner_user_id, teamId: row.team_id, permissions: row.permissions };
  }

  async function jwt(token: string): Promise<Principal> {
    let issuer: string | undefined;
    try {
      issuer = decodeJwt(token).iss;
    } catch {
      throw unauthorized(authMessages.invalidToken);
    }
    if (issuer === SCHEDULE_TOKEN_ISSUER) {
      const claims = await deps.scheduleTokens.verify(token).catch(() => { throw unauthorized(authMessages.invalidToken); });
      return { kind: 'schedule', ...claims };
    }
    const payload = await deps.idp.verify(token).catch(() => { throw unauthorized(authMessages.invalidToken); });
    // Our user ids are UUIDs; anything else cannot be one of our users (and must not reach a uuid cast).
    // An agent's own user may hold an IdP JWT too: that is how it manages its bindings (§4.4 "as agent").
    const user = isUuid(payload.sub)
      ? await findUserForToken(db, payload.sub)
      : undefined;
    if (!user) throw unauthorized(authMessages.invalidToken);
    return { kind: 'jwt', userId: user.id, email: user.email, metadata: user.metadata };
  }

  return {
    authenticate(token) {
      if (token.startsWith(tokenPrefixes.apiKey)) return apiKey(token);
      if (token.startsWith(tokenPrefixes.oauthAccess)) return oauth(token);
      if (token.startsWith(tokenPrefixes.agent)) return agent(token);
      if (token.startsWith(tokenPrefixes.oauthRefresh)) return Promise.reject(unauthorized(authMessages.invalidOAuth));
      return jwt(token);
    },
  };
}
