import { calculatePKCECodeChallenge, generateRandomCodeVerifier } from 'oauth4webapi';
import { describe, expect, it } from 'vitest';
import {
  consentCsrfToken, isRegisteredRedirectUri, isValidConsentCsrfToken, mayAuthorizeApp, parseScope, redirectUriProblem,
  s256Challenge, verifierMatchesChallenge, type AuthorizeParams,
} from './rules.js';

describe('OAuth rules', () => {
  it('computes the S256 challenge as an independent client library does, and compares verifiers', async () => {
    const verifier = generateRandomCodeVerifier();
    const challenge = await calculatePKCECodeChallenge(verifier);
    expect(s256Challenge(verifier)).toBe(challenge);
    expect(verifierMatchesChallenge(verifier, challenge)).toBe(true);
    expect(verifierMatchesChallenge(`${verifier}x`, challenge)).toBe(false);
    expect(verifierMatchesChallenge('short', s256Challenge('short'))).toBe(false);
  });

  it('matches redirect URIs as exact strings only', () => {
    const registered = ['https://app.example/cb'];
    expect(isRegisteredRedirectUri(registered, 'https://app.example/cb')).toBe(true);
    for (const variant of ['https://app.example/cb/', 'https://APP.example/cb', 'https://app.example/cb?x=1', 'https://app.example:444/cb']) {
      expect(isRegisteredRedirectUri(registered, variant)).toBe(false);
    }
  });

  it('accepts https, loopback http and private-use schemes for native clients only', () => {
    expect(redirectUriProblem('https://a.example/cb', 'web')).toBeNull();
    expect(redirectUriProblem('http://127.0.0.1:8080/cb', 'web')).toBeNull();
    expect(redirectUriProblem('http://a.example/cb', 'web')).toMatch(/https/);
    expect(redirectUriProblem('https://a.example/cb#frag', 'web')).toMatch(/fragment/);
    expect(redirectUriProblem('com.example.app:/cb', 'mobile')).toBeNull();
    expect(redirectUriProblem('com.example.app:/cb', 'web')).toMatch(/https/);
    expect(redirectUriProblem('not a url', 'web')).toMatch(/absolute/);
  });

  it('parses scopes and restricts private apps to their owner', () => {
    expect(parseScope(' profile:read  profile:read mobile:full ')).toEqual(['profile:read', 'mobile:full']);
    expect(parseScope(undefined)).toEqual([]);
    expect(mayAuthorizeApp({ owner_id: 'a', review_status: 'private' }, 'a')).toBe(true);
    expect(mayAuthorizeApp({ owner_id: 'a', review_status: 'private' }, 'b')).toBe(false);
    expect(mayAuthorizeApp({ owner_id: 'a', review_status: 'approved' }, 'b')).toBe(true);
    expect(mayAuthorizeApp({ owner_id: 'a', review_status: 'rejected' }, 'a')).toBe(false);
  });

  it('binds the consent CSRF token to the session, the user, the request and a time window', () => {
    const params: AuthorizeParams = {
      client_id: 'wfc-1', redirect_uri: 'https://a.example/cb', response_type: 'code', scope: 'profile:read', state: 's',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256',
    };
    const now = 1_800_000_000;
    const token = consentCsrfToken('jwt-1', 'user-1', params, now);
    expect(isValidConsentCsrfToken(token, 'jwt-1', 'user-1', params, now + 10)).toBe(true);
    expect(isValidConsentCsrfToken(token, 'jwt-2', 'user-1', params, now)).toBe(false);
    expect(isValidConsentCsrfToken(token, 'jwt-1', 'user-2', params, now)).toBe(false);
    expect(isValidConsentCsrfToken(token, 'jwt-1', 'user-1', { ...params, scope: 'profile:read mobile:full' }, now)).toBe(false);
    expect(isValidConsentCsrfToken(token, 'jwt-1', 'user-1', params, now + 16 * 60)).toBe(false);
    expect(isValidConsentCsrfToken('garbage', 'jwt-1', 'user-1', params, now)).toBe(false);
  });
});
