import { createHash, createHmac } from 'node:crypto';
import { constantTimeEqual } from '../../crypto.js';

/** Scopes the service knows (spec §5.2). */
export const KNOWN_SCOPES = ['profile:read', 'orders:checkout', 'mobile:full', 'chat:completions'] as const;
export type OAuthScope = (typeof KNOWN_SCOPES)[number];

/** Lifetimes (spec §5.5 leaves them open; docs/oauth.md states them). */
export const ACCESS_TOKEN_TTL_SECONDS = 3600;
export const REFRESH_TOKEN_TTL_SECONDS = 30 * 24 * 3600;
export const CODE_TTL_SECONDS = 60;
/** How long a consent page's CSRF token stays valid. */
export const CONSENT_TTL_SECONDS = 15 * 60;

export const isKnownScope = (scope: string): scope is OAuthScope => (KNOWN_SCOPES as readonly string[]).includes(scope);

/** `scope` parameter → distinct scope names in order (RFC 6749 §3.3: space-delimited). */
export function parseScope(value: string | undefined | null): string[] {
  if (!value) return [];
  return [...new Set(value.split(' ').filter(Boolean))];
}

export const formatScope = (scopes: readonly string[]): string => scopes.join(' ');

export const isSubset = (wanted: readonly string[], allowed: readonly string[]): boolean => wanted.every((s) => allowed.includes(s));

/**
 * What a token may do now: the scopes it was issued with that its client still has. Narrowing a
 * client's scopes (PATCH /oauth/apps/:appId) thus takes effect at once on tokens already issued,
 * without rewriting them; every check of a token's scopes goes through this.
 */
export const effectiveScopes = (granted: readonly string[], clientScopes: readonly string[]): string[] =>
  granted.filter((s) => clientScopes.includes(s));

/**
 * Redirect URIs compare as exact strings (RFC 9700 §4.1.3): no normalisation of trailing slashes,
 * case, query or port, so a near miss never receives a code.
 */
export const isRegisteredRedirectUri = (registered: readonly string[], given: string): boolean => registered.includes(given);

/** A redirect URI an app may register: absolute, no fragment; web clients need https (http only on loopback). */
export function redirectUriProblem(uri: string, platform: 'web' | 'desktop' | 'mobile'): string | null {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return 'is not an absolute URL';
  }
  if (url.hash || uri.includes('#')) return 'must not contain a fragment';
  const loopback = ['127.0.0.1', '[::1]', 'localhost'].includes(url.hostname);
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:') return loopback ? null : 'must use https (http is allowed on loopback only)';
  if (platform === 'web') return 'must use https';
  // Desktop and mobile apps may use a private-use scheme (RFC 8252 §7.1), such as com.example.app:/cb.
  return /^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+:$/.test(url.protocol) ? null : 'must use https, loopback http or a reverse-domain private-use scheme';
}

/** RFC 7636 §4.1: 43–128 unreserved characters. */
export const isValidCodeVerifier = (verifier: string): boolean => /^[A-Za-z0-9._~-]{43,128}$/.test(verifier);
/** An S256 challenge is the base64url of a SHA-256 digest: exactly 43 characters. */
export const isValidS256Challenge = (challenge: string): boolean => /^[A-Za-z0-9_-]{43}$/.test(challenge);

export const s256Challenge = (verifier: string): string => createHash('sha256').update(verifier, 'ascii').digest('base64url');

/** RFC 7636 §4.6 with S256, compared in constant time. */
export const verifierMatchesChallenge = (verifier: string, challenge: string): boolean =>
  isValidCodeVerifier(verifier) && constantTimeEqual(s256Challenge(verifier), challenge);

/** Only the owner may authorize a private (unreviewed) app; anyone may authorize an approved one; nobody a rejected one. */
export const mayAuthorizeApp = (app: { owner_id: string; review_status: 'private' | 'approved' | 'rejected' }, userId: string): boolean =>
  app.review_status === 'approved' || (app.review_status === 'private' && app.owner_id === userId);

/** The authorize request as the consent form carries it between GET and POST. */
export interface AuthorizeParams {
  client_id: string;
  redirect_uri: string;
  response_type: string;
  scope: string;
  state: string;
  code_challenge: string;
  code_challenge_method: string;
}

/**
 * The consent form's CSRF token: `<issuedAt>.<HMAC>` over the signed-in user and the exact
 * authorize request, keyed by a hash of the session JWT. Another site can neither read the
 * session cookie nor reuse a token for a different user, client, redirect URI, scope or challenge.
 */
export function consentCsrfToken(sessionJwt: string, userId: string, params: AuthorizeParams, issuedAt: number): string {
  const key = createHash('sha256').update(`wf-oauth-consent:${sessionJwt}`).digest();
  const message = [userId, params.client_id, params.redirect_uri, params.response_type, params.scope, params.state,
    params.code_challenge, params.code_challenge_method, String(issuedAt)].join('\n');
  return `${issuedAt}.${createHmac('sha256', key).update(message).digest('base64url')}`;
}

export function isValidConsentCsrfToken(token: string, sessionJwt: string, userId: string, params: AuthorizeParams, nowSeconds: number): boolean {
  const match = /^(\d{1,12})\.[A-Za-z0-9_-]{43}$/.exec(token);
  if (!match) return false;
  const issuedAt = Number(match[1]);
  if (issuedAt > nowSeconds + 60 || nowSeconds - issuedAt > CONSENT_TTL_SECONDS) return false;
  return constantTimeEqual(consentCsrfToken(sessionJwt, userId, params, issuedAt), token);
}

/** Seconds left until `expiresAt`, never negative. */
export const secondsUntil = (expiresAt: Date, now = Date.now()): number => Math.max(0, Math.floor((expiresAt.getTime() - now) / 1000));
