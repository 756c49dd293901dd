import type { Database } from '../db/client.js';
import { sha256Hex } from '../crypto.js';
import { generateToken, hasValidTokenShape } from '../credentials/tokens.js';
import { findLivePhoneToken, insertPhoneToken } from './phone-login/phone-login-repository.js';

// The phone token (spec §5.1): proof that the caller verified a phone number a moment ago, issued
// by `/auth/phone/verify` and `/my/phone/bind` and accepted only as the body field `phoneToken` on
// the public quote, create and pay endpoints (§5.3). Random and prefixed like every token; only
// its sha256 is stored; it expires after `hardware_sales.phone_token_ttl_seconds`.

export interface PhoneIdentity { phone: string; userId: string }

export async function issuePhoneToken(db: Database, identity: PhoneIdentity, ttlSeconds: number): Promise<string> {
  const token = generateToken('phone');
  await insertPhoneToken(db, {
    token_hash: sha256Hex(token), phone: identity.phone, user_id: identity.userId,
    expires_at: new Date(Date.now() + ttlSeconds * 1000), created_at: new Date(),
  });
  return token;
}

/** The verified phone and its user, or null for a malformed, unknown or expired token. */
export async function verifyPhoneToken(db: Database, token: string): Promise<PhoneIdentity | null> {
  if (!hasValidTokenShape('phone', token)) return null;
  const row = await findLivePhoneToken(db, sha256Hex(token));
  return row ? { phone: row.phone, userId: row.user_id } : null;
}
