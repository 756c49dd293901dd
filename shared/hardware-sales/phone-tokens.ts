import type { Database } from '../db/client.js';
import { sha256Hex } from '../crypto.js';
import { generateToken, hasValidTokenShape } from '../credentials/tokens.js';

// The phone token (spec §5.1): proof that the caller verified a phone number a moment ago, issued
// by `/auth/phone/verify` and `/my/phone/bind` and accepted only as the body field `phoneToken` on
// the public quote, create and pay endpoints (§5.3). Random and prefixed like every token; only
// its sha256 is stored; it expires after `hardware_sales.phone_token_ttl_seconds`.

export interface PhoneIdentity { phone: string; userId: string }

export async function issuePhoneToken(db: Database, identity: PhoneIdentity, ttlSeconds: number): Promise<string> {
  const token = generateToken('phone');
  await db.insertInto('phone_tokens').values({
    token_hash: sha256Hex(token), phone: identity.phone, user_id: identity.userId,
    expires_at: new Date(Date.now() + ttlSeconds * 1000), created_at: new Date(),
  }).execute();
  return token;
}

/** The verified phone and its user, or null for a malformed, unknown or expired token. */
export async function verifyPhoneToken(db: Database, token: string): Promise<PhoneIdentity | null> {
  if (!hasValidTokenShape('phone', token)) return null;
  const row = await db.selectFrom('phone_tokens').select(['phone', 'user_id'])
    .where('token_hash', '=', sha256Hex(token)).where('expires_at', '>', new Date()).executeTakeFirst();
  return row ? { phone: row.phone, userId: row.user_id } : null;
}
