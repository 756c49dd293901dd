import { randomInt } from 'node:crypto';
import Fastify from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authPlugin } from '../../api/plugins/auth.js';
import { errorsPlugin } from '../../api/plugins/errors.js';
import { phoneAuthRoutes } from '../../api/routes/hardware-sales/phone-auth.js';
import { verifyPhoneToken } from '../../shared/hardware-sales/phone-tokens.js';
import { PHONE_SESSION_TTL_SECONDS, phoneOnlyEmail } from '../../shared/hardware-sales/phone-login/service.js';
import { SmsSendError } from '../../shared/hardware-sales/phone-login/sms.js';
import { createUser } from '../../shared/identity/service.js';
import { runCli } from '../harness/cli.js';
import { credentialFactory } from '../harness/credentials.js';
import { withSetting } from '../harness/settings.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

type Inject = TestStack['app']['inject'];

describe('phone login: /auth/phone/send-otp, /auth/phone/verify, /my/phone/bind', () => {
  let stack: TestStack;
  let make: ReturnType<typeof credentialFactory>;

  /** A phone no other test uses. */
  const newPhone = () => `+86139${String(randomInt(0, 100_000_000)).padStart(8, '0')}`;
  /** A caller address of its own per test, so the hourly IP budget of one test never spends another's. */
  const newIp = () => `10.${randomInt(0, 256)}.${randomInt(0, 256)}.${randomInt(1, 255)}`;

  const post = (url: string, payload: object, options: { ip?: string; token?: string; inject?: Inject } = {}) =>
    (options.inject ?? stack.app.inject.bind(stack.app))({
      method: 'POST', url, payload, remoteAddress: options.ip ?? newIp(),
      headers: options.token ? { authorization: `Bearer ${options.token}` } : {},
    });
  const send = (phone: string, options: { ip?: string; lang?: string; inject?: Inject } = {}) =>
    post('/auth/phone/send-otp', { phone, ...(options.lang ? { lang: options.lang } : {}) }, options);
  const verify = (phone: string, code: string, lang?: string) => post('/auth/phone/verify', { phone, code, ...(lang ? { lang } : {}) });
  const bind = (token: string | undefined, phone: string, code: string) => post('/my/phone/bind', { phone, code }, { token });

  /** The code of the newest SMS to `phone`, read from the development outbox. */
  const latestCode = async (phone: string) => {
    const row = await stack.db.selectFrom('sms_outbox').select('body').where('phone', '=', phone).orderBy('id', 'desc').executeTakeFirstOrThrow();
    return /\b(\d{6})\b/.exec(row.body)![1]!;
  };
  const sendAndRead = async (phone: string) => {
    const res = await send(phone);
    expect(res.statusCode).toBe(200);
    return latestCode(phone);
  };
  /**
   * Sends another code at once, past the cooldown: budgets are keyed by their limit, so a cooldown
   * value used by no earlier call is a fresh budget (the check itself is never bypassed).
   */
  let cooldowns = 100;
  const resend = (phone: string) => withSetting(stack, 'hardware_sales.rate_limits', { otpPhoneCooldownSeconds: cooldowns++ }, async () => {
    expect((await send(phone)).statusCode).toBe(200);
  });
  const wrongCode = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0');

  /** Everything a phone request may write, for "nothing changed" checks. */
  const dbState = async (phone: string) => ({
    users: await stack.db.selectFrom('users').selectAll().orderBy('id').execute(),
    otps: await stack.db.selectFrom('phone_otps').selectAll().where('phone', '=', phone).orderBy('id').execute(),
    phoneTokens: await stack.db.selectFrom('phone_tokens').selectAll().orderBy('token_hash').execute(),
    outbox: await stack.db.selectFrom('sms_outbox').selectAll().where('phone', '=', phone).orderBy('id').execute(),
    projects: await stack.db.selectFrom('projects').select('id').orderBy('id').execute(),
  });
  const otpRows = (phone: string) => stack.db.selectFrom('phone_otps').selectAll().where('phone', '=', phone).orderBy('created_at').execute();

  beforeAll(async () => {
    stack = await createTestStack();
    make = credentialFactory(stack);
  });
  afterAll(() => stack?.close());

  it('send → code in the outbox (CLI too) → verify registers, and the session and phone token work', async () => {
    const phone = newPhone();
    const sent = await send(phone);
    expect(sent.statusCode).toBe(200);
    expect(sent.json()).toEqual({ success: true, message: expect.any(String), expiresIn: 300, retryAfter: 60 });

    // Only the hash is stored, bound to the phone; the SMS (Chinese by default) carries the code.
    const [otp] = await otpRows(phone);
    expect(otp).toMatchObject({ purpose: 'login', attempts: 0, consumed_at: null });
    const code = await latestCode(phone);
    expect(otp!.code_hash).not.toContain(code);
    expect(otp!.expires_at.getTime() - otp!.created_at.getTime()).toBeGreaterThan(295_000);
    const outbox = await runCli(['sms', 'outbox', '--phone', phone], stack.env);
    expect(outbox.code).toBe(0);
    expect(outbox.json).toEqual({ messages: [{ phone, body: expect.stringContaining(code), createdAt: expect.any(String) }] });
    expect((outbox.json!.messages as Array<{ body: string }>)[0]!.body).toMatch(/验证码/);

    const res = await verify(phone, code);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toEqual({
      success: true,
      data: {
        user: { id: expect.any(String), phone, email: null, name: null },
        team: { id: expect.any(String), slug: expect.any(String), name: '我的团队' },
        project: { id: expect.any(String), team_id: body.data.team.id, slug: expect.any(String), name: '我的项目', system_purpose: 'personal_default' },
        session: { accessToken: expect.any(String), tokenType: 'Bearer', expiresIn: PHONE_SESSION_TTL_SECONDS },
        phoneToken: expect.stringMatching(/^wfp-/),
        created: true,
      },
    });
    const user = await stack.db.selectFrom('users').selectAll().where('id', '=', body.data.user.id).executeTakeFirstOrThrow();
    expect(user).toMatchObject({ phone, email: phoneOnlyEmail(phone) });
    expect(phoneOnlyEmail('+8613800000000')).toBe('8613800000000@phone.invalid');

    const me = await stack.app.inject({ method: 'GET', url: '/my', headers: { authorization: `Bearer ${body.data.session.accessToken}` } });
    expect(me.statusCode).toBe(200);
    expect(me.json()).toMatchObject({ userId: user.id });
    expect(await verifyPhoneToken(stack.db, body.data.phoneToken)).toEqual({ phone, userId: user.id });
    const token = await stack.db.selectFrom('phone_tokens').selectAll().where('user_id', '=', user.id).executeTakeFirstOrThrow();
    expect(token.expires_at.getTime() - token.created_at.getTime()).toBe(900_000);

    // The code is consumed: the same code again is refused.
    expect((await stack.db.selectFrom('phone_otps').select('consumed_at').where('id', '=', otp!.id).executeTakeFirstOrThrow()).consumed_at).not.toBeNull();
    const again = await verify(phone, code);
    expect(again.statusCode).toBe(400);
    expect(again.json()).toEqual({ success: false, error: { code: 'INVALID_CODE', message: expect.any(String) } });

    // A second login of the phone: the same account, team and project, `created: false`.
    await resend(phone);
    const second = await verify(phone, await latestCode(phone));
    expect(second.statusCode).toBe(200);
    expect(second.json().data).toMatchObject({ user: { id: user.id, phone }, team: { id: body.data.team.id }, project: { id: body.data.project.id }, created: false });
    expect(await stack.db.selectFrom('users').select('id').where('phone', '=', phone).execute()).toHaveLength(1);
  });

  it('lang en: English SMS and English names; an account made elsewhere with the phone logs in', async () => {
    const phone = newPhone();
    const existing = await createUser(stack.db, { email: `phone-owner-${randomInt(0, 1e9)}@example.com`, name: 'Ada', phone });
    const sent = await send(phone, { lang: 'en' });
    expect(sent.json().message).toBe('Verification code sent');
    const { body } = await stack.db.selectFrom('sms_outbox').select('body').where('phone', '=', phone).executeTakeFirstOrThrow();
    const code = await latestCode(phone);
    expect(body).toBe(`Your verification code is ${code}. It expires in 5 minutes. Do not share it with anyone.`);
    const res = await verify(phone, code, 'en-US');
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toMatchObject({
      user: { id: existing.id, phone, email: existing.email, name: 'Ada' }, team: { name: 'Personal team' }, project: { name: 'My project' }, created: false,
    });
  });

  it('400 INVALID_PHONE for a number that is not E.164, and nothing is written', async () => {
    const phone = newPhone();
    const before = await dbState(phone);
    for (const bad of ['13800138000', '+0123456789', '+86 13800138000', 'phone', '+1234567', '+1234567890123456', '']) {
      for (const res of [await send(bad), await verify(bad, '123456')]) {
        expect(res.statusCode, bad).toBe(400);
        expect(res.json()).toEqual({ success: false, error: { code: 'INVALID_PHONE', message: expect.stringContaining('E.164') } });
      }
    }
    const missing = await post('/auth/phone/send-otp', {});
    expect(missing.statusCode).toBe(400);
    expect(missing.json()).toMatchObject({ success: false, error: { code: 'INVALID_REQUEST' } }); // the public family's code (spec §7.6), not the generic lower-case one
    expect(await dbState(phone)).toEqual(before);
    expect(await stack.db.selectFrom('phone_otps').select('id').where('phone', 'in', ['13800138000', '+0123456789', 'phone']).execute()).toEqual([]);
  });

  it('per-phone cooldown: 429 RATE_LIMITED with Retry-After = seconds left, and no second code', async () => {
    const phone = newPhone();
    expect((await send(phone)).statusCode).toBe(200);
    const before = await dbState(phone);
    const res = await send(phone, { ip: newIp() });
    expect(res.statusCode).toBe(429);
    expect(res.json()).toEqual({ success: false, error: { code: 'RATE_LIMITED', message: expect.any(String) } });
    const retryAfter = Number(res.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(55);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(res.headers['x-ratelimit-limit']).toBe('1');
    expect(res.headers['x-ratelimit-remaining']).toBe('0');
    expect(await dbState(phone)).toEqual(before);
  });

  it('per-IP hourly budget: 429 once the address has asked otpIpPerHour times', async () => {
    await withSetting(stack, 'hardware_sales.rate_limits', { otpIpPerHour: 2 }, async () => {
      const ip = newIp();
      expect((await send(newPhone(), { ip })).statusCode).toBe(200);
      expect((await send(newPhone(), { ip })).statusCode).toBe(200);
      const phone = newPhone();
      const before = await dbState(phone);
      const res = await send(phone, { ip });
      expect(res.statusCode).toBe(429);
      expect(res.json()).toEqual({ success: false, error: { code: 'RATE_LIMITED', message: expect.any(String) } });
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(3000);
      expect(res.headers['x-ratelimit-limit']).toBe('2');
      expect(await dbState(phone)).toEqual(before);
      // Another address is not affected.
      expect((await send(phone)).statusCode).toBe(200);
    });
  });

  it('a wrong code is 400 INVALID_CODE and counted; the right one still works within the limit', async () => {
    const phone = newPhone();
    const code = await sendAndRead(phone);
    const users = await stack.db.selectFrom('users').select('id').execute();
    for (let i = 1; i <= 2; i++) {
      const res = await verify(phone, wrongCode(code));
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ success: false, error: { code: 'INVALID_CODE', message: 'The verification code is invalid or expired' } });
      expect((await otpRows(phone))[0]).toMatchObject({ attempts: i, consumed_at: null });
    }
    expect(await stack.db.selectFrom('users').select('id').execute()).toEqual(users);
    expect(await stack.db.selectFrom('phone_tokens').select('token_hash').where('phone', '=', phone).execute()).toEqual([]);
    expect((await verify(phone, code)).statusCode).toBe(200);
  });

  it('a code is bound to its phone: another phone’s code is refused', async () => {
    const [a, b] = [newPhone(), newPhone()];
    const codeA = await sendAndRead(a);
    const codeB = await sendAndRead(b);
    if (codeA === codeB) return; // one chance in a million
    const res = await verify(a, codeB);
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('INVALID_CODE');
  });

  it('brute force: after 5 wrong codes the code is dead (429), the right one included, and no session is issued', async () => {
    const phone = newPhone();
    const code = await sendAndRead(phone);
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await verify(phone, wrongCode(code))).statusCode);
    expect(statuses).toEqual([400, 400, 400, 400, 429]);
    const before = await dbState(phone);
    const right = await verify(phone, code);
    expect(right.statusCode).toBe(429);
    expect(right.json()).toEqual({ success: false, error: { code: 'TOO_MANY_ATTEMPTS', message: expect.any(String) } });
    expect(right.json().data).toBeUndefined();
    expect(Number(right.headers['retry-after'])).toBeGreaterThan(0);
    expect(await dbState(phone)).toEqual(before);
    expect(before.users.some((u) => u.phone === phone)).toBe(false);
    expect((await otpRows(phone))[0]).toMatchObject({ attempts: 5, consumed_at: null });
    // A new code starts afresh.
    await resend(phone);
    expect((await verify(phone, await latestCode(phone))).statusCode).toBe(200);
  });

  it('an expired or never-sent code is 400 INVALID_CODE, like a wrong one, and nothing changes', async () => {
    const phone = newPhone();
    const code = await sendAndRead(phone);
    await stack.db.updateTable('phone_otps').set({ expires_at: sql<Date>`now() - interval '1 second'` }).where('phone', '=', phone).execute();
    const before = await dbState(phone);
    const res = await verify(phone, code);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ success: false, error: { code: 'INVALID_CODE', message: 'The verification code is invalid or expired' } });
    expect(await dbState(phone)).toEqual(before);

    const never = newPhone();
    const beforeNever = await dbState(never);
    const none = await verify(never, '123456');
    expect(none.statusCode).toBe(400);
    expect(none.json()).toEqual(res.json());
    expect(await dbState(never)).toEqual(beforeNever);
  });

  it('a new code supersedes the older one', async () => {
    const phone = newPhone();
    const first = await sendAndRead(phone);
    await resend(phone);
    const second = await latestCode(phone);
    const rows = await otpRows(phone);
    expect(rows).toHaveLength(2);
    expect(rows[0]!.consumed_at).not.toBeNull();
    expect(rows[1]!.consumed_at).toBeNull();
    if (first !== second) expect((await verify(phone, first)).statusCode).toBe(400);
    expect((await verify(phone, second)).statusCode).toBe(200);
  });

  it('sms outbox CLI: newest first, this phone only; a malformed phone names the flag', async () => {
    const phone = newPhone();
    const first = await sendAndRead(phone);
    await resend(phone);
    const second = await latestCode(phone);
    await sendAndRead(newPhone());
    const out = await runCli(['sms', 'outbox', '--phone', phone], stack.env);
    expect(out.code).toBe(0);
    const messages = out.json!.messages as Array<{ phone: string; body: string; createdAt: string }>;
    expect(messages.map((m) => m.phone)).toEqual([phone, phone]);
    expect(messages[0]!.body).toContain(second);
    expect(messages[1]!.body).toContain(first);
    expect(Date.parse(messages[0]!.createdAt)).toBeGreaterThanOrEqual(Date.parse(messages[1]!.createdAt));

    const bad = await runCli(['sms', 'outbox', '--phone', '13800138000'], stack.env);
    expect(bad.code).not.toBe(0);
    expect(bad.error).toMatchObject({ error: 'invalid_flag', message: expect.stringContaining('--phone') });
  });

  it('20 concurrent verifies of the right code log in once and consume the code once', async () => {
    const phone = newPhone();
    const code = await sendAndRead(phone);
    const results = await Promise.all(Array.from({ length: 20 }, () => verify(phone, code)));
    const statuses = results.map((r) => r.statusCode).sort();
    expect(statuses).toEqual([200, ...Array<number>(19).fill(400)]);
    for (const r of results.filter((x) => x.statusCode === 400)) expect(r.json().error.code).toBe('INVALID_CODE');
    const users = await stack.db.selectFrom('users').select('id').where('phone', '=', phone).execute();
    expect(users).toHaveLength(1);
    expect(await stack.db.selectFrom('phone_tokens').select('token_hash').where('user_id', '=', users[0]!.id).execute()).toHaveLength(1);
    expect(await stack.db.selectFrom('projects').select('id').where('created_by', '=', users[0]!.id).execute()).toHaveLength(1);
    expect((await otpRows(phone))[0]).toMatchObject({ attempts: 0, consumed_at: expect.any(Date) });
  });

  describe('POST /my/phone/bind', () => {
    it('401 without a JWT (public envelope) and nothing changes', async () => {
      const phone = newPhone();
      const code = await sendAndRead(phone);
      const before = await dbState(phone);
      for (const token of [undefined, 'not-a-jwt']) {
        const res = await bind(token, phone, code);
        expect(res.statusCode).toBe(401);
        expect(res.json()).toEqual({ success: false, error: { code: expect.any(String), message: expect.any(String) } });
      }
      expect(await dbState(phone)).toEqual(before);
    });

    it('403 for an API key (JWT only)', async () => {
      const { owner, apiKey } = await make.fundedTenant();
      const res = await bind(apiKey, newPhone(), '123456');
      expect(res.statusCode).toBe(403);
      expect(res.json().success).toBe(false);
      expect((await stack.db.selectFrom('users').select('phone').where('id', '=', owner.id).executeTakeFirstOrThrow()).phone).toBeNull();
    });

    it('binds a free phone, again is fine, and the phone then logs in to that account', async () => {
      const user = await make.user('binder');
      const jwt = await make.jwt(user.id);
      const phone = newPhone();

      const wrong = await bind(jwt, phone, wrongCode(await sendAndRead(phone)));
      expect(wrong.statusCode).toBe(400);
      expect(wrong.json().error.code).toBe('INVALID_CODE');
      expect((await stack.db.selectFrom('users').select('phone').where('id', '=', user.id).executeTakeFirstOrThrow()).phone).toBeNull();

      const res = await bind(jwt, phone, await latestCode(phone));
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ success: true, data: { phone, phoneToken: expect.stringMatching(/^wfp-/) } });
      expect(await verifyPhoneToken(stack.db, res.json().data.phoneToken)).toEqual({ phone, userId: user.id });
      expect((await stack.db.selectFrom('users').select('phone').where('id', '=', user.id).executeTakeFirstOrThrow()).phone).toBe(phone);

      await resend(phone);
      const again = await bind(jwt, phone, await latestCode(phone));
      expect(again.statusCode).toBe(200);

      await resend(phone);
      const login = await verify(phone, await latestCode(phone));
      expect(login.json().data).toMatchObject({ user: { id: user.id }, created: false });
    });

    it('409 PHONE_ALREADY_BOUND for a phone another account holds; nothing changes and the code stays usable', async () => {
      const phone = newPhone();
      const holder = await createUser(stack.db, { email: `holder-${randomInt(0, 1e9)}@example.com`, phone });
      const other = await make.user('other');
      const jwt = await make.jwt(other.id);
      const code = await sendAndRead(phone);
      const before = await dbState(phone);
      const res = await bind(jwt, phone, code);
      expect(res.statusCode).toBe(409);
      expect(res.json()).toEqual({ success: false, error: { code: 'PHONE_ALREADY_BOUND', message: expect.any(String) } });
      expect(await dbState(phone)).toEqual(before);
      // The code proved the phone: it logs in to the account that holds it.
      const login = await verify(phone, code);
      expect(login.json().data).toMatchObject({ user: { id: holder.id }, created: false });
    });

    it('an account that moved to another phone keeps its address; its old phone registers anew', async () => {
      const first = newPhone();
      const login = (await verify(first, await sendAndRead(first))).json().data;
      const second = newPhone();
      expect((await bind(login.session.accessToken, second, await sendAndRead(second))).statusCode).toBe(200);

      await resend(first);
      const fresh = await verify(first, await latestCode(first));
      expect(fresh.statusCode).toBe(200);
      expect(fresh.json().data).toMatchObject({ created: true, user: { phone: first, email: null } });
      expect(fresh.json().data.user.id).not.toBe(login.user.id);
      const row = await stack.db.selectFrom('users').select('email').where('id', '=', fresh.json().data.user.id).executeTakeFirstOrThrow();
      expect(row.email).toMatch(new RegExp(`^${first.slice(1)}\\.[0-9a-f]{8}@phone\\.invalid$`));
    });
  });

  describe('SMS provider failure', () => {
    let failing: Awaited<ReturnType<typeof Fastify>>;
    let calls = 0;

    beforeAll(async () => {
      failing = Fastify({ logger: false });
      failing.setValidatorCompiler(validatorCompiler);
      failing.setSerializerCompiler(serializerCompiler);
      await failing.register(errorsPlugin);
      await failing.register(authPlugin, { authenticator: stack.deps.authenticator });
      await failing.register(phoneAuthRoutes, {
        ...stack.deps,
        sms: { name: 'failing', send: async () => { calls++; throw new SmsSendError('provider answered 500'); } },
      });
      await failing.ready();
    });
    afterAll(() => failing?.close());

    it('502 SMS_SEND_FAILED and no usable code is left; an earlier code is untouched', async () => {
      const phone = newPhone();
      const before = await dbState(phone);
      const res = await send(phone, { inject: failing.inject.bind(failing) });
      expect(calls).toBe(1);
      expect(res.statusCode).toBe(502);
      expect(res.json()).toEqual({ success: false, error: { code: 'SMS_SEND_FAILED', message: expect.any(String) } });
      expect(await dbState(phone)).toEqual(before);

      // With a code already out, a failed resend leaves that code as it was.
      const other = newPhone();
      const code = await sendAndRead(other);
      const beforeOther = await dbState(other);
      await withSetting(stack, 'hardware_sales.rate_limits', { otpPhoneCooldownSeconds: cooldowns++ }, async () => {
        expect((await send(other, { inject: failing.inject.bind(failing) })).statusCode).toBe(502);
      });
      expect(await dbState(other)).toEqual(beforeOther);
      expect((await verify(other, code)).statusCode).toBe(200);
    });
  });
});
