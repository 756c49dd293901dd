import type { Database } from '../../db/client.js';
import { sha256Hex } from '../../crypto.js';
import { newId } from '../../ids.js';
import { generateToken } from '../tokens.js';
import * as repo from './repository.js';
import { ACCESS_TOKEN_TTL_SECONDS, REFRESH_TOKEN_TTL_SECONDS, formatScope } from './rules.js';

export interface TokenSet {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

/** An access and a refresh token on a grant; only their hashes are stored, the plaintexts are returned once. */
export async function issueTokenPair(
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
