import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../config.js';
import type { Database } from '../../db/client.js';
import { createSmsProvider, otpMessage, phoneLanguage, type SmsProvider } from './sms.js';

// Choosing a provider never touches the database: a handle that is never used stands in for it.
const unusedDb = null as unknown as Database;
const config = (env: Record<string, string>) => loadConfig({ DATA_DIR: '/tmp/unused', ...env });

describe('createSmsProvider (SMS_PROVIDER)', () => {
  it('unset or dev: the development provider outside production', () => {
    expect(createSmsProvider(config({ NODE_ENV: 'development' }), unusedDb).name).toBe('dev');
    expect(createSmsProvider(config({ NODE_ENV: 'test' }), unusedDb).name).toBe('dev');
    expect(createSmsProvider(config({ NODE_ENV: 'test', SMS_PROVIDER: 'DEV' }), unusedDb).name).toBe('dev');
  });

  it('production never falls back to the development provider: unnamed, every send fails; named dev works', async () => {
    const unnamed = createSmsProvider(config({ NODE_ENV: 'production' }), unusedDb);
    expect(unnamed.name).toBe('none');
    await expect(unnamed.send('+8613800000000', 'x')).rejects.toThrow(/No SMS provider is configured/);
    expect(createSmsProvider(config({ NODE_ENV: 'production', SMS_PROVIDER: 'dev' }), unusedDb).name).toBe('dev');
  });

  it('an unknown name is a start-up error naming the known ones', () => {
    expect(() => createSmsProvider(config({ SMS_PROVIDER: 'carrier-x' }), unusedDb))
      .toThrow(/SMS_PROVIDER: unknown provider 'carrier-x' \(known: dev;/);
    expect(() => createSmsProvider(config({ SMS_PROVIDER: 'toString' }), unusedDb)).toThrow(ConfigError);
  });

  it('a registered provider is chosen by its name', () => {
    const real: SmsProvider = { name: 'carrier-x', send: async () => {} };
    const factories = { dev: () => ({ name: 'dev', send: async () => {} }), 'carrier-x': () => real };
    expect(createSmsProvider(config({ NODE_ENV: 'production', SMS_PROVIDER: 'carrier-x' }), unusedDb, factories)).toBe(real);
  });
});

describe('message text', () => {
  it('zh by default, en on request; the code and the lifetime in minutes', () => {
    expect(otpMessage('012345', 300, 'zh')).toBe('您的验证码是 012345，5 分钟内有效。请勿将验证码告诉他人。');
    expect(otpMessage('012345', 300, 'en')).toBe('Your verification code is 012345. It expires in 5 minutes. Do not share it with anyone.');
    expect(otpMessage('012345', 30, 'en')).toContain('1 minute.');
    expect(otpMessage('012345', 90, 'en')).toContain('2 minutes.');
  });

  it('language: absent → zh, zh* → zh, anything else → en', () => {
    expect(phoneLanguage(undefined)).toBe('zh');
    expect(phoneLanguage('  ')).toBe('zh');
    expect(phoneLanguage('zh-CN')).toBe('zh');
    expect(phoneLanguage('ZH')).toBe('zh');
    expect(phoneLanguage('en')).toBe('en');
    expect(phoneLanguage('fr')).toBe('en');
  });
});
