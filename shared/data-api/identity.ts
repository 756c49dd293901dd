import { decodeJwt, type JWTPayload } from 'jose';
import { LRUCache } from 'lru-cache';
import { constantTimeEqual } from '../crypto.js';
import type { IdentityProvider } from '../credentials/identity-provider.js';
import { isUuid } from '../ids.js';
import type { SecretKeyRing } from '../secrets/key-ring.js';
import { DataApiError } from './errors.js';

/**
 * Who a data-API request (REST, RPC, storage, realtime) acts as. `anon` = only the public anon key;
 * `authenticated` = a valid identity-provider JWT, whose `sub` is `auth.uid()` in the policies.
 */
export type DataApiIdentity =
  | { role: 'anon' }
  | { role: 'authenticated'; userId: string; claims: JWTPayload & { sub: string } };

/** Prefix of the anon key, so a key pasted in the wrong place is recognisable (not a credential prefix). */
export const ANON_KEY_PREFIX = 'wfd-anon-';
/** HKDF label: the key is derived from SECRETS_KEY, so it needs no storage and rotates with it. */
const ANON_KEY_LABEL = 'workflow-app-service/data-api/anon-key/v1';
const ANON_KEY_BYTES = 24;

const fail = (code: string, message: string, hint: string | null = null) => new DataApiError(401, code, message, null, hint);

export interface DataApiIdentityResolver {
  /** The current anon key (what `cli data-api keys` prints); null when no SECRETS_KEY is configured. */
  readonly anonKey: string | null;
  /**
   * Decides the identity from the `apikey` header (or `apikey` query parameter, as websockets send
   * it) and the `Authorization` header, or throws a 401 DataApiError.
   */
  resolve(request: { headers: Record<string, string | string[] | undefined>; query?: unknown }): Promise<DataApiIdentity>;
}

/** The anon keys the ring accepts: from SECRETS_KEY first, then from each SECRETS_KEY_PREVIOUS (rotation grace). */
export function anonKeysOf(secrets: SecretKeyRing): { current: string | null; all: string[] } {
  const { current, all } = secrets.deriveKeys(ANON_KEY_LABEL, ANON_KEY_BYTES);
  const render = (bytes: Buffer) => ANON_KEY_PREFIX + bytes.toString('base64url');
  return { current: current ? render(current) : null, all: all.map(render) };
}

const single = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? undefined : value);

export function createDataApiIdentity(deps: { idp: IdentityProvider; secrets: SecretKeyRing }): DataApiIdentityResolver {
  const keys = anonKeysOf(deps.secrets);
  const isAnonKey = (candidate: string) => {
    let match = false;
    // Compare against every key without stopping early, so timing does not tell which one matched.
    for (const key of keys.all) match = constantTimeEqual(candidate, key) || match;
    return match;
  };

  // A verified token is remembered until it expires: the signature check (0.2 ms of CPU for ES256)
  // is most of what a point read costs the API, and a frontend sends the same token for an hour.
  const verified = new LRUCache<string, DataApiIdentity & { role: 'authenticated' }>({ max: 10_000 });

  async function userFrom(token: string): Promise<DataApiIdentity> {
    const known = verified.get(token);
    if (known) {
      if ((known.claims.exp ?? 0) * 1000 > Date.now()) return known;
      verified.delete(token);
      throw fail('PGRST303', 'JWT expired');
    }
    // Opaque service credentials (API keys wfk-, OAuth wfo-/wfr-, agent wfa-, phone wfp-) are not
    // JWTs and fail here; schedule tokens are JWTs with another issuer and audience and fail in
    // verify. The verification is the HTTP API's own (the IdP's keys, issuer, audience, exp).
    try {
      decodeJwt(token);
    } catch {
      throw fail('PGRST301', 'Invalid JWT: not a user token or the anon key');
    }
    let claims: JWTPayload & { sub: string };
    try {
      claims = await deps.idp.verify(token);
    } catch (error) {
      if ((error as { code?: string }).code === 'ERR_JWT_EXPIRED') throw fail('PGRST303', 'JWT expired');
      throw fail('PGRST301', 'Invalid JWT: signature, issuer or audience not accepted');
    }
    // Our user ids are UUIDs; any other subject cannot be one of our users (nor reach auth.uid()).
    if (!isUuid(claims.sub)) throw fail('PGRST301', 'Invalid JWT: subject is not a user id');
    const identity = { role: 'authenticated' as const, userId: claims.sub.toLowerCase(), claims };
    verified.set(token, identity);
    return identity;
  }

  return {
    anonKey: keys.current,
    async resolve(request) {
      const query = (request.query ?? {}) as Record<string, unknown>;
      const apikey = single(request.headers.apikey) ?? (typeof query.apikey === 'string' ? query.apikey : undefined);
      if (!apikey) throw fail('PGRST301', 'No API key found in request', 'Send the anon key in the `apikey` header (`cli data-api keys`).');
      if (!isAnonKey(apikey)) throw fail('PGRST301', 'Invalid API key', 'Use the anon key that `cli data-api keys` prints.');
      const authorization = single(request.headers.authorization);
      if (authorization === undefined) return { role: 'anon' };
      const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
      if (!match) throw fail('PGRST301', 'Authorization header must be `Bearer <token>`');
      const token = match[1]!;
      // supabase-js without a signed-in user sends the anon key as Bearer: that is the anon role.
      if (token.startsWith(ANON_KEY_PREFIX)) {
        if (!isAnonKey(token)) throw fail('PGRST301', 'Invalid API key');
        return { role: 'anon' };
      }
      return userFrom(token);
    },
  };
}
