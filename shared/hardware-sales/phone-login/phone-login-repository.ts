import { sql, type Insertable } from 'kysely';
import type { Database } from '../../db/client.js';
import type { PhoneTokensTable } from '../../db/types.js';

// Kysely queries of phone login: one-time codes (otp.ts), the account of a phone (service.ts),
// phone tokens (../phone-tokens.ts) and the development SMS outbox (sms.ts).

// One-time codes.

/** A fresh code row, valid `ttlSeconds` by the database clock; answers when it expires. */
export async function insertOtp(
  db: Database, otp: { id: string; phone: string; purpose: 'login'; codeHash: string; requesterIp: string | null; ttlSeconds: number },
): Promise<{ expires_at: Date }> {
  return db.insertInto('phone_otps').values({
    id: otp.id, phone: otp.phone, purpose: otp.purpose, code_hash: otp.codeHash,
    requester_ip: otp.requesterIp,
    expires_at: sql<Date>`now() + make_interval(secs => ${otp.ttlSeconds})`,
    created_at: sql<Date>`clock_timestamp()`,
  }).returning(['expires_at']).executeTakeFirstOrThrow();
}

/** Marks the phone's older unconsumed codes used: only the code just sent (and any newer) works. */
export async function supersedeOlderOtps(db: Database, phone: string, keepId: string): Promise<void> {
  await db.updateTable('phone_otps').set({ consumed_at: sql<Date>`now()` })
    .where('phone', '=', phone).where('consumed_at', 'is', null).where('id', '!=', keepId)
    .where('created_at', '<=', (eb) => eb.selectFrom('phone_otps').select('created_at').where('id', '=', keepId))
    .execute();
}

/** Removes a code that never reached its phone (the SMS provider failed). */
export async function discardOtp(db: Database, id: string): Promise<void> {
  await db.deleteFrom('phone_otps').where('id', '=', id).execute();
}

/** The phone's newest unconsumed, unexpired code, locked until the transaction ends. */
export async function lockNewestLiveOtp(trx: Database, phone: string, purpose: 'login') {
  return trx.selectFrom('phone_otps').select(['id', 'code_hash', 'attempts'])
    .where('phone', '=', phone).where('purpose', '=', purpose)
    .where('consumed_at', 'is', null).where('expires_at', '>', sql<Date>`now()`)
    .orderBy('created_at', 'desc').orderBy('id', 'desc').limit(1)
    .forUpdate().executeTakeFirst();
}

/** Counts one wrong guess; answers the attempts so far. */
export async function countWrongOtpAttempt(trx: Database, id: string): Promise<number> {
  const { attempts } = await trx.updateTable('phone_otps').set({ attempts: sql<number>`attempts + 1` })
    .where('id', '=', id).returning('attempts').executeTakeFirstOrThrow();
  return attempts;
}

export async function markOtpConsumed(trx: Database, id: string): Promise<void> {
  await trx.updateTable('phone_otps').set({ consumed_at: sql<Date>`now()` }).where('id', '=', id).execute();
}

// The account of a phone.

const accountColumns = ['id', 'email', 'name'] as const;

export async function findAccountByPhone(trx: Database, phone: string) {
  return trx.selectFrom('users').select(accountColumns).where('phone', '=', phone).executeTakeFirst();
}

/** Inserts a phone-only account unless a unique index (the phone, the address) refuses it: then undefined. */
export async function insertAccountUnlessTaken(trx: Database, account: { id: string; email: string; phone: string }) {
  return trx.insertInto('users').values({ id: account.id, email: account.email, name: null, phone: account.phone })
    .onConflict((oc) => oc.doNothing()).returning(accountColumns).executeTakeFirst();
}

export async function findPhoneOwner(trx: Database, phone: string) {
  return trx.selectFrom('users').select('id').where('phone', '=', phone).executeTakeFirst();
}

/** Sets the user's phone; the unique index refuses a phone another account holds. */
export async function setUserPhone(trx: Database, userId: string, phone: string): Promise<void> {
  await trx.updateTable('users').set({ phone, updated_at: new Date() }).where('id', '=', userId).execute();
}

/** The account's verified phone, or null (a buyer signed in by JWT or OAuth). */
export async function findUserPhone(db: Database, userId: string): Promise<string | null> {
  const user = await db.selectFrom('users').select('phone').where('id', '=', userId).executeTakeFirst();
  return user?.phone ?? null;
}

// Phone tokens.

export async function insertPhoneToken(db: Database, values: Insertable<PhoneTokensTable>): Promise<void> {
  await db.insertInto('phone_tokens').values(values).execute();
}

/** The phone and user of an unexpired token, by its hash. */
export async function findLivePhoneToken(db: Database, tokenHash: string) {
  return db.selectFrom('phone_tokens').select(['phone', 'user_id'])
    .where('token_hash', '=', tokenHash).where('expires_at', '>', new Date()).executeTakeFirst();
}

// The development SMS outbox.

export async function insertSmsOutboxMessage(db: Database, phone: string, body: string): Promise<void> {
  await db.insertInto('sms_outbox').values({ phone, body, created_at: new Date() }).execute();
}
