import { createHmac, timingSafeEqual } from 'node:crypto';
import type { SecretKeyRing } from '../secrets/key-ring.js';

// Short-lived URLs of the local object store (device firmware, spec §4.10): the service hands out
// `<origin>/object-store/<key>?expires=…&name=…&sig=…` and the object route serves exactly what was
// signed. `sig` is base64url HMAC-SHA256 over one line per field, so no field can be moved into
// another; the HMAC key is derived (HKDF) from the secrets key ring, so every API process signs
// alike and the key survives restarts without a secret of its own to manage.

/** The path every signed URL starts with (api/routes/storage/objects.ts). */
export const OBJECT_STORE_PATH = '/object-store';

/** HKDF `info` label: keys derived for another use never sign a URL. */
const SIGNING_LABEL = 'object-url-signing';
/** Bumped if the signed text ever changes shape, so old and new signatures cannot be confused. */
const SIGNED_TEXT_VERSION = 'object-url:v1';
const SIG_BYTES = 32;
const EXPIRES = /^[0-9]{1,12}$/;

export interface SignedObjectRef {
  key: string;
  /** Unix seconds after which the URL is refused. */
  expires: number;
  /** The file name the download is saved as (`Content-Disposition`); signed like the rest. */
  name?: string;
}

export type UrlVerdict =
  | { ok: true; ref: SignedObjectRef }
  | { ok: false; reason: 'invalid' | 'expired' };

export interface ObjectUrlSigner {
  /** False when there is no key (production without SECRETS_KEY): nothing can be signed or verified. */
  readonly canSign: boolean;
  sign(ref: SignedObjectRef): string;
  /** Checks a URL's parts as received (query values may be missing, repeated or malformed). */
  verify(key: string, query: { expires?: unknown; sig?: unknown; name?: unknown }, nowMs?: number): UrlVerdict;
}

const signedText = (ref: SignedObjectRef) => [SIGNED_TEXT_VERSION, ref.key, String(ref.expires), ref.name ?? ''].join('\n');

/**
 * The signer of this deployment, the same in every process that shares its secrets: the key ring's
 * current key (derived for this use) signs, every ring key verifies, so a rotation keeps live URLs valid.
 */
export function objectUrlSigner(ring: SecretKeyRing): ObjectUrlSigner {
  const keys = ring.deriveKeys(SIGNING_LABEL, SIG_BYTES);
  const mac = (key: Buffer, ref: SignedObjectRef) => createHmac('sha256', key).update(signedText(ref)).digest();
  // Production without SECRETS_KEY signs nothing (firmware links answer 503), so it verifies nothing either.
  const verifying = keys.current ? keys.all : [];
  return {
    canSign: keys.current !== null,
    sign(ref) {
      const key = keys.current;
      if (!key) throw new Error('no key to sign object URLs with (SECRETS_KEY is not set)');
      return mac(key, ref).toString('base64url');
    },
    verify(key, query, nowMs = Date.now()) {
      const { expires, sig, name } = query;
      if (typeof expires !== 'string' || !EXPIRES.test(expires) || typeof sig !== 'string') return { ok: false, reason: 'invalid' };
      if (name !== undefined && typeof name !== 'string') return { ok: false, reason: 'invalid' };
      const given = Buffer.from(sig, 'base64url');
      // Buffer.from drops what is not base64url: insist the text was exactly the encoding of 32 bytes.
      if (given.length !== SIG_BYTES || given.toString('base64url') !== sig) return { ok: false, reason: 'invalid' };
      const ref: SignedObjectRef = { key, expires: Number(expires), ...(name === undefined ? {} : { name }) };
      if (!verifying.some((signingKey) => timingSafeEqual(mac(signingKey, ref), given))) return { ok: false, reason: 'invalid' };
      // Checked after the signature, so that "expired" is only ever said of a URL we issued.
      if (ref.expires * 1000 <= nowMs) return { ok: false, reason: 'expired' };
      return { ok: true, ref };
    },
  };
}

/** `<origin>/object-store/<key>?expires=…&name=…&sig=…`, valid for `ttlSeconds` from `nowMs`. */
export function signedObjectUrl(
  signer: ObjectUrlSigner, origin: string, object: { key: string; name?: string }, ttlSeconds: number, nowMs = Date.now(),
): string {
  const ref: SignedObjectRef = { key: object.key, expires: Math.floor(nowMs / 1000) + ttlSeconds, ...(object.name === undefined ? {} : { name: object.name }) };
  const query = new URLSearchParams({ expires: String(ref.expires), ...(ref.name === undefined ? {} : { name: ref.name }), sig: signer.sign(ref) });
  return `${origin}${OBJECT_STORE_PATH}/${object.key}?${query.toString()}`;
}
