import { randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStack, type TestStack } from '../../../test/harness/stack.js';
import { AppError } from '../../errors.js';
import { newId } from '../../ids.js';
import { createMemoryRateLimiter } from '../../rate-limit/rate-limiter.js';
import { consumeOtp, issueOtp, otpHashKey } from './otp.js';
import { bindPhone, isPhoneOnlyEmail, parsePhone, phoneOnlyEmail, sendOtp, verifyOtpLogin, type PhoneLoginDeps } from './service.js';
import { createDevSmsProvider, SmsSendError, type SmsProvider } from './sms.js';

describe('phone login service', () => {
  let stack: TestStack;
  const newPhone = () => `+86137${String(randomInt(0, 100_000_000)).padStart(8, '0')}`;
  const deps = (sms?: SmsProvider): PhoneLoginDeps => ({
    db: stack.db, settings: stack.deps.settings, rateLimiter: createMemoryRateLimiter(), idp: stack.deps.idp,
    sms: sms ?? createDevSmsProvider(stack.db), otpKey: otpHashKey(undefined),
  });
  const rejection = (promise: Promise<unknown>) => promise.then(() => { throw new Error('expected a rejection'); }, (error: unknown) => error as AppError);
  const otps = (phone: string) => stack.db.selectFrom('phone_otps').selectAll().where('phone', '=', phone).orderBy('created_at').execute();

  beforeAll(async () => {
    stack = await createTestStack();
  });
  afterAll(() => stack?.close());

  it('phone-only address and phone parsing', () => {
    expect(phoneOnlyEmail('+8613800000000')).toBe('8613800000000@phone.invalid');
    expect(phoneOnlyEmail('+8613800000000', 'ab12')).toBe('8613800000000.ab12@phone.invalid');
    expect(isPhoneOnlyEmail('8613800000000@PHONE.invalid')).toBe(true);
    expect(isPhoneOnlyEmail('ada@example.com')).toBe(false);
    expect(parsePhone(' +8613800000000 ')).toBe('+8613800000000');
    for (const bad of ['8613800000000', '+86-138', 42, null]) {
      expect(() => parsePhone(bad)).toThrow(expect.objectContaining({ status: 400, error: 'INVALID_PHONE' }));
    }
  });

  it('a failing provider: 502 SMS_SEND_FAILED with the cause kept, and no code row left', async () => {
    const phone = newPhone();
    const cause = new SmsSendError('carrier said no');
    const error = await rejection(sendOtp(deps({ name: 'failing', send: async () => { throw cause; } }), { phone, ip: '10.0.0.1' }));
    expect(error).toBeInstanceOf(AppError);
    expect(error).toMatchObject({ status: 502, error: 'SMS_SEND_FAILED' });
    expect(error.cause).toBe(cause);
    expect(error.message).not.toContain('carrier');
    expect(await otps(phone)).toEqual([]);
  });

  it('a provider that hangs up after accepting nothing (any rejection) is the same 502', async () => {
    const phone = newPhone();
    const error = await rejection(sendOtp(deps({ name: 'flaky', send: () => Promise.reject(new Error('socket hang up')) }), { phone, ip: '10.0.0.2' }));
    expect(error).toMatchObject({ status: 502, error: 'SMS_SEND_FAILED' });
    expect(await otps(phone)).toEqual([]);
  });

  it('a provider that does not answer within the timeout is the same 502', async () => {
    const phone = newPhone();
    const hung = { ...deps({ name: 'hung', send: () => new Promise<void>(() => {}) }), smsTimeoutMs: 50 };
    const error = await rejection(sendOtp(hung, { phone, ip: '10.0.0.4' }));
    expect(error).toMatchObject({ status: 502, error: 'SMS_SEND_FAILED' });
    expect((error.cause as Error).message).toMatch(/within 50 ms/);
    expect(await otps(phone)).toEqual([]);
  });

  it('the provider receives the E.164 phone and the text with the code; the reply has the TTL and cooldown', async () => {
    const phone = newPhone();
    const sent: Array<{ phone: string; body: string }> = [];
    const result = await sendOtp(deps({ name: 'recording', send: async (p, body) => { sent.push({ phone: p, body }); } }), { phone: ` ${phone}`, lang: 'en', ip: '10.0.0.3' });
    expect(result).toEqual({ message: 'Verification code sent', expiresIn: 300, retryAfter: 60 });
    expect(sent).toEqual([{ phone, body: expect.stringMatching(/^Your verification code is \d{6}\./) }]);
    const code = /\d{6}/.exec(sent[0]!.body)![0];
    expect((await verifyOtpLogin(deps(), { phone, code })).created).toBe(true);
  });

  it('concurrent wrong codes are all counted, up to the limit, then the code is dead', async () => {
    const phone = newPhone();
    const key = otpHashKey(undefined);
    const { code } = await issueOtp(stack.db, { phone, requesterIp: null, ttlSeconds: 300, key });
    const wrong = code === '000000' ? '000001' : '000000';
    const results = await Promise.all(Array.from({ length: 12 }, () => consumeOtp(stack.db, { phone, code: wrong, maxAttempts: 5, key }, async () => 'never')));
    expect(results.filter((r) => r.status === 'invalid')).toHaveLength(4);
    expect(results.filter((r) => r.status === 'locked')).toHaveLength(8);
    expect((await otps(phone))[0]).toMatchObject({ attempts: 5, consumed_at: null });
    expect(await consumeOtp(stack.db, { phone, code, maxAttempts: 5, key }, async () => 'never')).toEqual({ status: 'locked' });
  });

  it('when the work after a right code fails, everything rolls back and the code stays usable', async () => {
    const phone = newPhone();
    const key = otpHashKey(undefined);
    const { code } = await issueOtp(stack.db, { phone, requesterIp: null, ttlSeconds: 300, key });
    const failure = await rejection(consumeOtp(stack.db, { phone, code, maxAttempts: 5, key }, async (trx) => {
      await trx.insertInto('sms_outbox').values({ phone, body: 'written inside', created_at: new Date() }).execute();
      throw new AppError(409, 'NOPE');
    }));
    expect(failure).toMatchObject({ status: 409 });
    expect(await stack.db.selectFrom('sms_outbox').select('id').where('phone', '=', phone).execute()).toEqual([]);
    expect((await otps(phone))[0]).toMatchObject({ attempts: 0, consumed_at: null });
    expect(await consumeOtp(stack.db, { phone, code, maxAttempts: 5, key }, async () => 'done')).toEqual({ status: 'ok', value: 'done' });
    expect(await consumeOtp(stack.db, { phone, code, maxAttempts: 5, key }, async () => 'again')).toEqual({ status: 'invalid' });
  });

  it('bind: a phone held by another account is 409 and keeps the code; its holder binds it again', async () => {
    const phone = newPhone();
    const key = otpHashKey(undefined);
    const holder = (await verifyOtpLogin(deps(), { phone, code: (await issueOtp(stack.db, { phone, requesterIp: null, ttlSeconds: 300, key })).code })).user;
    const { code } = await issueOtp(stack.db, { phone, requesterIp: null, ttlSeconds: 300, key });
    const stranger = await stack.db.insertInto('users').values({ id: newId(), email: `s-${randomInt(0, 1e9)}@example.com`, name: null, phone: null })
      .returning('id').executeTakeFirstOrThrow();
    const error = await rejection(bindPhone(deps(), { userId: stranger.id, phone, code }));
    expect(error).toMatchObject({ status: 409, error: 'PHONE_ALREADY_BOUND' });
    expect(await bindPhone(deps(), { userId: holder.id, phone, code })).toEqual({ phone, phoneToken: expect.stringMatching(/^wfp-/) });
  });
});
