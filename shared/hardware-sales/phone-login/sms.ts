import { ConfigError, type Config } from '../../config.js';
import type { Database } from '../../db/client.js';
import { insertSmsOutboxMessage } from './phone-login-repository.js';

// Text messages for phone login (docs/sms-provider.md). The service only ever calls `send`; which
// provider answers is configuration (`SMS_PROVIDER`), chosen once at start-up.

/**
 * What a real SMS provider implements (docs/sms-provider.md). `send` resolves once the provider
 * has accepted the message for delivery, and rejects (any error; `SmsSendError` preferred) when it
 * did not: the caller then answers 502 `SMS_SEND_FAILED` and leaves no usable code behind.
 */
export interface SmsProvider {
  /** The `SMS_PROVIDER` name it answers to (logs, health). */
  readonly name: string;
  /** `phone` is E.164 (`+8613800000000`); `body` is the complete text, already in the user's language. */
  send(phone: string, body: string): Promise<void>;
}

/** A provider refused or failed to accept a message. `message` may reach logs, never the caller. */
export class SmsSendError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SmsSendError';
  }
}

/** The development provider: every message lands in `sms_outbox`, read with `sms outbox --phone P`. */
export function createDevSmsProvider(db: Database): SmsProvider {
  return {
    name: 'dev',
    async send(phone, body) {
      await insertSmsOutboxMessage(db, phone, body);
    },
  };
}

export type SmsProviderFactory = (config: Config, db: Database) => SmsProvider;

/**
 * Every provider `SMS_PROVIDER` can name. A real provider adds its entry here (its own module,
 * reading its own configuration from `config`; docs/sms-provider.md "Registering a provider").
 */
export const smsProviderFactories: Readonly<Record<string, SmsProviderFactory>> = {
  dev: (_config, db) => createDevSmsProvider(db),
};

/**
 * Production without `SMS_PROVIDER`: the service runs (everything but phone login works), and
 * every send fails, so a code is never silently swallowed by an outbox nobody reads.
 */
export const unconfiguredSmsProvider: SmsProvider = {
  name: 'none',
  async send() {
    throw new SmsSendError('No SMS provider is configured (SMS_PROVIDER); docs/sms-provider.md');
  },
};

/**
 * The provider `SMS_PROVIDER` names. Unset means `dev` outside production; in production it means
 * none (sending fails with 502 until one is named; `SMS_PROVIDER=dev` for a staging box that wants
 * the outbox). An unknown name is a start-up error.
 */
export function createSmsProvider(
  config: Config,
  db: Database,
  factories: Readonly<Record<string, SmsProviderFactory>> = smsProviderFactories,
): SmsProvider {
  const name = config.SMS_PROVIDER?.trim().toLowerCase();
  if (!name) {
    return config.NODE_ENV === 'production' ? unconfiguredSmsProvider : factories.dev!(config, db);
  }
  const factory = Object.hasOwn(factories, name) ? factories[name] : undefined;
  if (!factory) {
    throw new ConfigError(`SMS_PROVIDER: unknown provider '${config.SMS_PROVIDER}' (known: ${Object.keys(factories).join(', ')}; docs/sms-provider.md)`);
  }
  return factory(config, db);
}

export type SmsLanguage = 'zh' | 'en';

/** The login-code text; `ttlSeconds` is shown in whole minutes (at least 1). */
export function otpMessage(code: string, ttlSeconds: number, lang: SmsLanguage): string {
  const minutes = Math.max(1, Math.ceil(ttlSeconds / 60));
  return lang === 'en'
    ? `Your verification code is ${code}. It expires in ${minutes} minute${minutes === 1 ? '' : 's'}. Do not share it with anyone.`
    : `您的验证码是 ${code}，${minutes} 分钟内有效。请勿将验证码告诉他人。`;
}

/** The language of the message and of what login creates: the body's `lang` (`zh*` Chinese, any other English), Chinese when absent. */
export function phoneLanguage(lang: string | undefined): SmsLanguage {
  const given = lang?.trim().toLowerCase();
  if (!given) return 'zh';
  return given.startsWith('zh') ? 'zh' : 'en';
}
