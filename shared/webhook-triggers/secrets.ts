import { createHash, timingSafeEqual } from 'node:crypto';
import { randomBase64Url, sha256Hex } from '../crypto.js';

/** CONTRACTS.md: `wht_` + 32 random bytes base64url. */
export const WEBHOOK_SECRET_PREFIX = 'wht_';
/** How much of the secret the view shows (`wht_AbCd`): enough to tell two secrets apart, too little to guess. */
const VISIBLE_PREFIX_LENGTH = 8;

export interface NewWebhookSecret { secret: string; hash: string; prefix: string }

/** A fresh secret; only `hash` (sha256 hex) and `prefix` are stored, `secret` is shown once. */
export function generateWebhookSecret(): NewWebhookSecret {
  const secret = WEBHOOK_SECRET_PREFIX + randomBase64Url(32);
  return { secret, hash: sha256Hex(secret), prefix: secret.slice(0, VISIBLE_PREFIX_LENGTH) };
}

// Compared against when there is no stored hash, so that "no trigger" and "no secret" cost the
// same hashing and comparison as a real check. No secret hashes to it (it is not a sha256 output
// of anything we know), and a match is refused anyway because there is no stored hash.
const DUMMY_HASH = Buffer.alloc(32, 0xa5);
const SHA256_HEX = /^[0-9a-f]{64}$/;

/**
 * Whether `presented` is the secret whose sha256 is `storedHash`. Always hashes the presented value
 * (an absent one as the empty string) and always runs one `timingSafeEqual` over 32 bytes, so the
 * time taken does not tell a missing trigger, a missing secret and a wrong secret apart.
 */
export function webhookSecretMatches(presented: string | undefined, storedHash: string | null | undefined): boolean {
  const presentedDigest = createHash('sha256').update(presented ?? '').digest();
  const usable = typeof storedHash === 'string' && SHA256_HEX.test(storedHash);
  const equal = timingSafeEqual(presentedDigest, usable ? Buffer.from(storedHash, 'hex') : DUMMY_HASH);
  return equal && usable && presented !== undefined && presented.startsWith(WEBHOOK_SECRET_PREFIX);
}
