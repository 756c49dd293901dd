import { randomBytes } from 'node:crypto';
import type { Transaction } from 'kysely';
import type { IdentityProvider } from '../../credentials/identity-provider.js';
import type { Database } from '../../db/client.js';
import { isUniqueViolation } from '../../db/errors.js';
import type { DB } from '../../db/types.js';
import { AppError } from '../../errors.js';
import { ensureDefaultProject, type DefaultProjectView } from '../../identity/default-project.js';
import { newId } from '../../ids.js';
import { phoneSchema } from '../../identity/schemas.js';
import type { RateLimiter } from '../../rate-limit/rate-limiter.js';
import type { SiteSettingsCache } from '../../site-settings/cache.js';
import { withTimeout } from '../../timeout.js';
import { issuePhoneToken } from '../phone-tokens.js';
import { assertWithinLimits } from '../../rate-limit/limits.js';
import { bucketKey } from '../rate-limits.js';
import { consumeOtp, issueOtp, type OtpCheck } from './otp.js';
import {
  discardOtp, findAccountByPhone, findPhoneOwner, insertAccountUnlessTaken, setUserPhone, supersedeOlderOtps,
} from './phone-login-repository.js';
import { otpMessage, phoneLanguage, type SmsProvider } from './sms.js';

// Phone login (spec §4.8, CONTRACTS.md "Hardware sales"): send a code, verify it to register or
// log in, or verify it to bind the phone to the signed-in user.

export interface PhoneLoginDeps {
  db: Database;
  settings: Pick<SiteSettingsCache, 'get'>;
  rateLimiter: RateLimiter;
  idp: Pick<IdentityProvider, 'issue'>;
  sms: SmsProvider;
  /** HMAC key of code hashes (`otpHashKey(config.SECRETS_KEY)`). */
  otpKey: Buffer;
  /** How long `sms.send` may take before the send counts as failed (default `SMS_SEND_TIMEOUT_MS`). */
  smsTimeoutMs?: number;
}

/** The ceiling on one `SmsProvider.send` (docs/sms-provider.md "Timeouts"). */
export const SMS_SEND_TIMEOUT_MS = 10_000;

/** Lifetime of the session JWT that a phone login issues: seven days (docs/decisions.md). */
export const PHONE_SESSION_TTL_SECONDS = 7 * 24 * 3600;

/** The reserved domain of phone-only accounts (RFC 2606 `.invalid`: never deliverable). */
export const PHONE_ONLY_EMAIL_DOMAIN = 'phone.invalid';

/**
 * `users.email` is NOT NULL: a phone-only account gets `<E.164 digits without +>@phone.invalid`.
 * `suffix` disambiguates when that address is already held (an account that registered with this
 * phone and later bound another keeps its address).
 */
export function phoneOnlyEmail(phone: string, suffix?: string): string {
  const digits = phone.replace(/\D/g, '');
  return `${digits}${suffix ? `.${suffix}` : ''}@${PHONE_ONLY_EMAIL_DOMAIN}`;
}

/** Whether an address is a phone-only placeholder rather than a real mailbox. */
export const isPhoneOnlyEmail = (email: string): boolean => email.toLowerCase().endsWith(`@${PHONE_ONLY_EMAIL_DOMAIN}`);

/** The E.164 phone, or 400 `INVALID_PHONE`. */
export function parsePhone(phone: unknown): string {
  const parsed = phoneSchema.safeParse(phone);
  if (!parsed.success) throw new AppError(400, 'INVALID_PHONE', 'Invalid phone number: expected E.164, e.g. +8613800138000');
  return parsed.data;
}

const invalidCode = () => new AppError(400, 'INVALID_CODE', 'The verification code is invalid or expired');
/** The code is dead: `Retry-After` is the phone's cooldown, after which a new code may be asked for. */
const tooManyAttempts = (retryAfterSeconds: number) => new AppError(429, 'TOO_MANY_ATTEMPTS', 'Too many wrong attempts for this code; request a new one', {},
  { 'retry-after': String(retryAfterSeconds) });
const phoneTaken = () => new AppError(409, 'PHONE_ALREADY_BOUND', 'This phone number is already bound to another account');

/** The outcome of a code check as the caller sees it: the value, or 400 / 429. */
function settle<T>(check: OtpCheck<T>, cooldownSeconds: number): T {
  if (check.status === 'ok') return check.value;
  throw check.status === 'locked' ? tooManyAttempts(cooldownSeconds) : invalidCode();
}

const sentMessage = { zh: '验证码已发送', en: 'Verification code sent' } as const;

export interface SendOtpResult { message: string; expiresIn: number; retryAfter: number }

/**
 * `POST /auth/phone/send-otp`: 400 `INVALID_PHONE`, then the caller IP's hourly budget and the
 * phone's cooldown (429 `RATE_LIMITED`, `Retry-After`), then a fresh code by SMS. A provider
 * failure (a rejection, or no answer within the timeout) answers 502 `SMS_SEND_FAILED` and removes
 * the new code, leaving the previous one as it was; the budgets stay spent (a failing provider must
 * not turn retries into a message pump).
 */
export async function sendOtp(deps: PhoneLoginDeps, input: { phone: unknown; lang?: string; ip: string }): Promise<SendOtpResult> {
  const phone = parsePhone(input.phone);
  const limits = await deps.settings.get('hardware_sales.rate_limits');
  const ttlSeconds = await deps.settings.get('hardware_sales.otp_ttl_seconds');
  const cooldown = limits.otpPhoneCooldownSeconds;
  await assertWithinLimits(deps.rateLimiter, [{ key: bucketKey('otp', 'ip', input.ip), limit: { points: limits.otpIpPerHour, windowSeconds: 3600 } }],
    'Too many verification codes requested from this address; retry later');
  await assertWithinLimits(deps.rateLimiter, [{ key: bucketKey('otp', 'phone', phone), limit: { points: 1, windowSeconds: cooldown } }],
    'A code was sent to this phone moments ago; wait before requesting another');

  const lang = phoneLanguage(input.lang);
  const otp = await issueOtp(deps.db, { phone, requesterIp: input.ip, ttlSeconds, key: deps.otpKey });
  try {
    const timeoutMs = deps.smsTimeoutMs ?? SMS_SEND_TIMEOUT_MS;
    await withTimeout(deps.sms.send(phone, otpMessage(otp.code, ttlSeconds, lang)), timeoutMs, () => new Error(`SMS provider did not answer within ${timeoutMs} ms`));
  } catch (error) {
    await discardOtp(deps.db, otp.id);
    const failure = new AppError(502, 'SMS_SEND_FAILED', 'The verification code could not be sent; try again later');
    failure.cause = error;
    throw failure;
  }
  await supersedeOlderOtps(deps.db, phone, otp.id);
  return { message: sentMessage[lang], expiresIn: ttlSeconds, retryAfter: cooldown };
}

export interface PhoneLoginResult {
  user: { id: string; phone: string; email: string | null; name: string | null };
  team: DefaultProjectView['team'];
  project: DefaultProjectView['project'];
  session: { accessToken: string; tokenType: 'Bearer'; expiresIn: number };
  phoneToken: string;
  created: boolean;
}

/** The account whose `users.phone` is `phone`, registered as a phone-only account when none is. */
async function findOrRegister(trx: Transaction<DB>, phone: string): Promise<{ user: { id: string; email: string; name: string | null }; created: boolean }> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const existing = await findAccountByPhone(trx, phone);
    if (existing) return { user: existing, created: false };
    const email = phoneOnlyEmail(phone, attempt === 0 ? undefined : randomBytes(4).toString('hex'));
    // DO NOTHING on any unique index: the phone (someone else took it meanwhile: loop and log in as
    // them) or the reserved address (held by an account that moved to another phone: suffix it).
    const inserted = await insertAccountUnlessTaken(trx, { id: newId(), email, phone });
    if (inserted) return { user: inserted, created: true };
  }
  throw new Error(`could not register a phone-only account for ${phone}`);
}

/**
 * `POST /auth/phone/verify`: the code (400 `INVALID_CODE` / 429 `TOO_MANY_ATTEMPTS`), then the
 * account of the phone, registered if new, its default team and project, a session JWT and a
 * phone token. 20 concurrent verifies of one code log in once (the code's row lock).
 */
export async function verifyOtpLogin(deps: PhoneLoginDeps, input: { phone: unknown; code: string; lang?: string }): Promise<PhoneLoginResult> {
  const phone = parsePhone(input.phone);
  const limits = await deps.settings.get('hardware_sales.rate_limits');
  const { user, created } = settle(await consumeOtp(deps.db, { phone, code: input.code, maxAttempts: limits.otpMaxAttempts, key: deps.otpKey },
    (trx) => findOrRegister(trx, phone)), limits.otpPhoneCooldownSeconds);

  const defaults = await ensureDefaultProject(deps.db, user.id, phoneLanguage(input.lang));
  const phoneTtl = await deps.settings.get('hardware_sales.phone_token_ttl_seconds');
  return {
    user: { id: user.id, phone, email: isPhoneOnlyEmail(user.email) ? null : user.email, name: user.name },
    team: defaults.team,
    project: defaults.project,
    session: { accessToken: await deps.idp.issue(user.id, PHONE_SESSION_TTL_SECONDS), tokenType: 'Bearer', expiresIn: PHONE_SESSION_TTL_SECONDS },
    phoneToken: await issuePhoneToken(deps.db, { phone, userId: user.id }, phoneTtl),
    created,
  };
}

/**
 * `POST /my/phone/bind`: the code as for login, then `users.phone` of the signed-in user. A phone
 * another account holds is 409 `PHONE_ALREADY_BOUND` and changes nothing (the code stays usable,
 * e.g. to log in to that account); the signed-in user's own phone again is fine.
 */
export async function bindPhone(deps: PhoneLoginDeps, input: { userId: string; phone: unknown; code: string }): Promise<{ phone: string; phoneToken: string }> {
  const phone = parsePhone(input.phone);
  const limits = await deps.settings.get('hardware_sales.rate_limits');
  settle(await consumeOtp(deps.db, { phone, code: input.code, maxAttempts: limits.otpMaxAttempts, key: deps.otpKey }, async (trx) => {
    const owner = await findPhoneOwner(trx, phone);
    if (owner && owner.id !== input.userId) throw phoneTaken();
    if (owner) return;
    try {
      await setUserPhone(trx, input.userId, phone);
    } catch (error) {
      // Bound by someone else between the read and the write (the unique index decides).
      if (isUniqueViolation(error)) throw phoneTaken();
      throw error;
    }
  }), limits.otpPhoneCooldownSeconds);
  const phoneTtl = await deps.settings.get('hardware_sales.phone_token_ttl_seconds');
  return { phone, phoneToken: await issuePhoneToken(deps.db, { phone, userId: input.userId }, phoneTtl) };
}
