import type { Database } from '../../db/client.js';
import { randomBase64Url, sha256Hex } from '../../crypto.js';
import { newId } from '../../ids.js';
import { OAuthError } from './errors.js';
import * as repo from './repository.js';
import {
  CODE_TTL_SECONDS, isRegisteredRedirectUri, isSubset, isValidS256Challenge, mayAuthorizeApp, parseScope, type AuthorizeParams,
} from './rules.js';

// The authorization endpoint (RFC 6749 §4.1.1 with PKCE): checking the request, then the user's approval.

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
  if (client.review_status === 'rejected') return fail('access_denied', 'This app was rejected in review');
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
