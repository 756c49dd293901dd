import {
  SignJWT, calculateJwkThumbprint, createLocalJWKSet, createRemoteJWKSet, importJWK,
  jwtVerify, type CryptoKey, type JWK, type JWTPayload, type JWTVerifyGetKey,
} from 'jose';
import type { Config } from '../config.js';
import { loadOrCreateSigningKey } from './service-keys.js';

const DEV_ALG = 'ES256';

/**
 * How identity-provider JWTs are signed and checked. In development the service is its own IdP:
 * an ES256 key pair made on first start under `.data/idp/` (or given as IDP_PRIVATE_JWK), with its
 * public half served at /.well-known/jwks.json. In production an external IdP is configuration:
 * JWT_JWKS_URL (asymmetric) or JWT_SECRET (HS256), plus JWT_ISSUER and JWT_AUDIENCE.
 */
export interface IdentityProvider {
  mode: 'dev-keypair' | 'external-jwks' | 'shared-secret';
  /** Public keys we publish; empty unless we are the IdP. */
  publicJwks: { keys: JWK[] };
  /** Signs a user token, when this deployment holds the signing key. */
  issue(userId: string, ttlSeconds: number): Promise<string>;
  verify(token: string): Promise<JWTPayload & { sub: string }>;
}

export class IdentityProviderError extends Error {}

export async function createIdentityProvider(
  config: Pick<Config, 'DATA_DIR' | 'IDP_PRIVATE_JWK' | 'JWT_JWKS_URL' | 'JWT_SECRET' | 'JWT_ISSUER' | 'JWT_AUDIENCE'>,
): Promise<IdentityProvider> {
  const claims = { issuer: config.JWT_ISSUER, audience: config.JWT_AUDIENCE };
  const verifyWith = (key: JWTVerifyGetKey | Uint8Array, algorithms: string[]) => async (token: string) => {
    const { payload } = await jwtVerify(token, key as JWTVerifyGetKey, { ...claims, algorithms, requiredClaims: ['sub', 'exp'] });
    return payload as JWTPayload & { sub: string };
  };
  const sign = (key: CryptoKey | Uint8Array, alg: string, kid?: string) => (userId: string, ttlSeconds: number) =>
    new SignJWT({})
      .setProtectedHeader({ alg, ...(kid ? { kid } : {}) })
      .setSubject(userId).setIssuer(config.JWT_ISSUER).setAudience(config.JWT_AUDIENCE)
      .setIssuedAt().setExpirationTime(`${ttlSeconds}s`)
      .sign(key);

  if (config.JWT_JWKS_URL) {
    return {
      mode: 'external-jwks',
      publicJwks: { keys: [] },
      issue: async () => { throw new IdentityProviderError('Tokens come from the external identity provider (JWT_JWKS_URL); this service cannot issue them'); },
      verify: verifyWith(createRemoteJWKSet(new URL(config.JWT_JWKS_URL)), ['RS256', 'ES256', 'PS256', 'EdDSA']),
    };
  }
  if (config.JWT_SECRET) {
    const secret = new TextEncoder().encode(config.JWT_SECRET);
    return { mode: 'shared-secret', publicJwks: { keys: [] }, issue: sign(secret, 'HS256'), verify: verifyWith(secret, ['HS256']) };
  }

  const privateJwk = await loadOrCreateSigningKey(config.DATA_DIR, 'signing-key', config.IDP_PRIVATE_JWK);
  const { d: _private, ...publicJwk } = privateJwk;
  const kid = privateJwk.kid ?? (await calculateJwkThumbprint(publicJwk));
  const published = { ...publicJwk, kid, alg: DEV_ALG, use: 'sig' };
  const privateKey = (await importJWK(privateJwk, DEV_ALG)) as CryptoKey;
  return {
    mode: 'dev-keypair',
    publicJwks: { keys: [published] },
    issue: sign(privateKey, DEV_ALG, kid),
    verify: verifyWith(createLocalJWKSet({ keys: [published] }), [DEV_ALG]),
  };
}
