import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import type { Transaction } from 'kysely';
import { decodeAes256Key } from '../../crypto.js';
import type { Database } from '../../db/client.js';
import type { DB } from '../../db/types.js';
import { newId } from '../../ids.js';
import { countWrongOtpAttempt, insertOtp, lockNewestLiveOtp, markOtpConsumed } from './phone-login-repository.js';

// One-time codes for phone login and bind (spec §4.8). A code proves that its sender holds the
// phone, whatever it is then used for, so there is one kind (`purpose = 'login'`). Only a hash is
// stored: HMAC-SHA256 over the phone and the code, so a row's hash is worthless for another phone,
// keyed (when SECRETS_KEY is set) so that reading the table does not let anyone try the million
// codes offline. Only the newest unconsumed, unexpired code of a phone counts; each wrong guess
// spends one of `otpMaxAttempts`, and at the limit the code is dead until a new one is sent.

export const OTP_LENGTH = 6;
/** The only purpose written; `bind` in the schema stays unused (a code is proof of the phone either way). */
const PURPOSE = 'login' as const;
const HASH_CONTEXT = 'phone-otp-hash-v1';

/** Six uniformly random digits from the CSPRNG (`crypto.randomInt`), leading zeros kept. */
export function generateOtpCode(): string {
  return String(randomInt(0, 10 ** OTP_LENGTH)).padStart(OTP_LENGTH, '0');
}

/**
 * The HMAC key of code hashes: derived from SECRETS_KEY when it is set (production), else a fixed
 * context string (development and tests, where the hash is then only bound to the phone).
 * Changing SECRETS_KEY invalidates the codes in flight (at most `otp_ttl_seconds` of them).
 */
export function otpHashKey(secretsKey: string | undefined): Buffer {
  const key = secretsKey ? decodeAes256Key(secretsKey) : null;
  return key ? createHmac('sha256', key).update(HASH_CONTEXT).digest() : Buffer.from(HASH_CONTEXT, 'utf8');
}

/** Hex HMAC-SHA256 of `phone` and `code`: a row cannot be replayed for another phone. */
export function hashOtp(key: Buffer, phone: string, code: string): string {
  return createHmac('sha256', key).update(`${phone}\n${code}`).digest('hex');
}

/** Constant-time comparison of two hex digests (unequal lengths are simply unequal). */
function sameDigest(storedHex: string, candidateHex: string): boolean {
  const stored = Buffer.from(storedHex, 'hex');
  const candidate = Buffer.from(candidateHex, 'hex');
  return stored.length === candidate.length && timingSafeEqual(stored, candidate);
}

export interface IssuedOtp { id: string; code: string; expiresAt: Date }

/**
 * Writes a fresh code for `phone`, valid `ttlSeconds` by the database clock. It supersedes the
 * phone's older codes only once `supersedeOlderOtps` is called (after the SMS went out), so a
 * failed send that `discardOtp`s its row leaves the previous code as it was.
 */
export async function issueOtp(
  db: Database,
  input: { phone: string; requesterIp: string | null; ttlSeconds: number; key: Buffer },
): Promise<IssuedOtp> {
  const id = newId();
  const code = generateOtpCode();
  const row = await insertOtp(db, {
    id, phone: input.phone, purpose: PURPOSE, codeHash: hashOtp(input.key, input.phone, code), requesterIp: input.requesterIp, ttlSeconds: input.ttlSeconds,
  });
  return { id, code, expiresAt: row.expires_at };
}

/** `invalid`: no live code, or a wrong one; `locked`: the code has used up its attempts. */
export type OtpCheck<T> = { status: 'ok'; value: T } | { status: 'invalid' } | { status: 'locked' };

/**
 * Checks `code` against the phone's newest live code under a row lock, so concurrent checks of one
 * code are serialized: a right code is consumed exactly once, every wrong one is counted.
 *
 * - no unconsumed, unexpired code → `invalid` (nothing written);
 * - the code already has `maxAttempts` wrong guesses → `locked` (even for the right code);
 * - a wrong code → `attempts + 1` is committed; `locked` if that reached the limit, else `invalid`;
 * - the right code → `onValid(trx)` runs in the same transaction, then the code is consumed. If
 *   `onValid` throws, everything rolls back: the code stays usable and nothing it wrote remains.
 */
export async function consumeOtp<T>(
  db: Database,
  input: { phone: string; code: string; maxAttempts: number; key: Buffer },
  onValid: (trx: Transaction<DB>) => Promise<T>,
): Promise<OtpCheck<T>> {
  const candidate = hashOtp(input.key, input.phone, input.code);
  return db.transaction().execute(async (trx): Promise<OtpCheck<T>> => {
    const row = await lockNewestLiveOtp(trx, input.phone, PURPOSE);
    if (!row) return { status: 'invalid' };
    if (row.attempts >= input.maxAttempts) return { status: 'locked' };
    if (!sameDigest(row.code_hash, candidate)) {
      const attempts = await countWrongOtpAttempt(trx, row.id);
      return attempts >= input.maxAttempts ? { status: 'locked' } : { status: 'invalid' };
    }
    const value = await onValid(trx);
    await markOtpConsumed(trx, row.id);
    return { status: 'ok', value };
  });
}
