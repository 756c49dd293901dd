import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { otpHashKey } from '../../../shared/hardware-sales/phone-login/otp.js';
import { bindPhone, sendOtp, verifyOtpLogin, type PhoneLoginDeps } from '../../../shared/hardware-sales/service.js';
import { createSmsProvider, type SmsProvider } from '../../../shared/hardware-sales/phone-login/sms.js';
import type { AppDeps } from '../../deps.js';
import { principalOf } from '../../plugins/auth.js';
import { useErrorEnvelope } from '../../plugins/errors.js';

// `phone` is a plain string in the schemas so that a malformed number is the spec's 400
// `INVALID_PHONE` (service `parsePhone`), not the generic `INVALID_REQUEST` of a schema miss.
const phoneField = z.string().max(64).describe('E.164, e.g. +8613800138000');
const codeField = z.string().max(32).describe('the 6-digit code from the SMS');
const langField = z.string().max(35).optional().describe('`zh` (default) or `en`: the SMS text and the names of what login creates');

const sendOtpResponse = z.object({
  success: z.literal(true),
  message: z.string(),
  expiresIn: z.number().int().describe('seconds the code stays valid'),
  retryAfter: z.number().int().describe('seconds before this phone may ask for another code'),
});

const verifyResponse = z.object({
  success: z.literal(true),
  data: z.object({
    user: z.object({ id: z.string(), phone: z.string(), email: z.string().nullable(), name: z.string().nullable() }),
    team: z.object({ id: z.string(), slug: z.string(), name: z.string() }),
    project: z.object({ id: z.string(), team_id: z.string(), slug: z.string(), name: z.string(), system_purpose: z.literal('personal_default') }),
    session: z.object({ accessToken: z.string(), tokenType: z.literal('Bearer'), expiresIn: z.number().int() }),
    phoneToken: z.string(),
    created: z.boolean().describe('true when this call registered the account'),
  }),
});

const bindResponse = z.object({ success: z.literal(true), data: z.object({ phone: z.string(), phoneToken: z.string() }) });

/**
 * Phone login (spec §4.8): send-otp, verify, /my/phone/bind, in the public envelope (§7.1). The SMS
 * provider comes from `SMS_PROVIDER` at registration (an unknown name fails start-up); tests pass
 * `sms` to put another in its place.
 */
export const phoneAuthRoutes: FastifyPluginAsyncZod<AppDeps & { sms?: SmsProvider }> = async (app, deps) => {
  useErrorEnvelope(app, 'public');
  const phoneDeps: PhoneLoginDeps = {
    db: deps.db, settings: deps.settings, rateLimiter: deps.rateLimiter, idp: deps.idp,
    sms: deps.sms ?? createSmsProvider(deps.config, deps.db),
    otpKey: otpHashKey(deps.config.SECRETS_KEY),
  };

  app.post('/auth/phone/send-otp', {
    schema: {
      tags: ['hardware-sales'],
      summary: 'Send a login code by SMS (per-phone cooldown, hourly per-IP budget)',
      body: z.object({ phone: phoneField, lang: langField }),
      response: { 200: sendOtpResponse },
    },
  }, async (request) => ({
    success: true as const,
    ...await sendOtp(phoneDeps, { phone: request.body.phone, lang: request.body.lang, ip: request.ip }),
  }));

  app.post('/auth/phone/verify', {
    schema: {
      tags: ['hardware-sales'],
      summary: 'Verify a code: register or log in, ensure the default project, issue a session and a phone token',
      body: z.object({ phone: phoneField, code: codeField, lang: langField }),
      response: { 200: verifyResponse },
    },
  }, async (request) => ({ success: true as const, data: await verifyOtpLogin(phoneDeps, request.body) }));

  app.post('/my/phone/bind', {
    config: { access: 'teamAdmin' },
    schema: {
      tags: ['hardware-sales'],
      summary: 'Bind a verified phone to the signed-in account (JWT only)',
      body: z.object({ phone: phoneField, code: codeField }),
      response: { 200: bindResponse },
    },
  }, async (request) => {
    const { userId } = principalOf(request, 'jwt');
    return { success: true as const, data: await bindPhone(phoneDeps, { userId, phone: request.body.phone, code: request.body.code }) };
  });
};
