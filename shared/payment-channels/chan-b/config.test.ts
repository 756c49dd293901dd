import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config.js';
import { chanBConfigFrom, type ChanBEnv } from './config.js';

const app = generateKeyPairSync('rsa', { modulusLength: 2048 });
const channel = generateKeyPairSync('rsa', { modulusLength: 2048 });
const appPem = app.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const channelPem = channel.publicKey.export({ type: 'spki', format: 'pem' }).toString();
const bare = (pem: string) => pem.split('\n').filter((line) => line && !line.startsWith('-----')).join('');

const complete = { CHAN_B_APP_ID: '2021000000000001', CHAN_B_APP_PRIVATE_KEY: appPem, CHAN_B_PUBLIC_KEY: channelPem };
/** As the service sees it: through loadConfig, so defaults and trimming apply. */
const envWith = (overrides: Record<string, string | undefined> = {}): ChanBEnv => loadConfig({ ...complete, ...overrides });

describe('chanBConfigFrom', () => {
  it('is null (not configured) when no variable is set, with the gateway defaulted', () => {
    expect(chanBConfigFrom(loadConfig({}))).toBeNull();
    expect(loadConfig({}).CHAN_B_GATEWAY_URL).toBe('https://openapi.alipay.com/gateway.do');
  });

  it.each(Object.keys(complete))('is null when only %s is missing', (name) => {
    expect(chanBConfigFrom(envWith({ [name]: undefined }))).toBeNull();
  });

  it('parses the keys: PEM, PEM on one line with \\n escapes, and the bare base64 the channel console hands out', () => {
    for (const [privateKey, publicKey] of [[appPem, channelPem], [appPem.replace(/\n/g, '\\n'), channelPem.replace(/\n/g, '\\n')], [bare(appPem), bare(channelPem)]]) {
      const config = chanBConfigFrom(envWith({ CHAN_B_APP_PRIVATE_KEY: privateKey, CHAN_B_PUBLIC_KEY: publicKey }))!;
      expect(config.appId).toBe('2021000000000001');
      expect(config.gatewayUrl).toBe('https://openapi.alipay.com/gateway.do');
      expect(config.appPrivateKey.type).toBe('private');
      expect(config.channelPublicKey.type).toBe('public');
      expect(config.channelPublicKey.equals(channel.publicKey)).toBe(true);
    }
  });

  it('names the variable of a malformed key', () => {
    expect(() => chanBConfigFrom(envWith({ CHAN_B_APP_PRIVATE_KEY: 'not a key' }))).toThrow(/CHAN_B_APP_PRIVATE_KEY is not a PEM private key/);
    expect(() => chanBConfigFrom(envWith({ CHAN_B_PUBLIC_KEY: '-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----' }))).toThrow(/CHAN_B_PUBLIC_KEY is not a PEM public key/);
  });

  it('refuses a private key where the channel public key belongs (swapped variables)', () => {
    expect(() => chanBConfigFrom(envWith({ CHAN_B_PUBLIC_KEY: appPem }))).toThrow(/CHAN_B_PUBLIC_KEY holds a private key/);
  });

  it('refuses keys that are not RSA', () => {
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    expect(() => chanBConfigFrom(envWith({ CHAN_B_APP_PRIVATE_KEY: ec.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() })))
      .toThrow(/CHAN_B_APP_PRIVATE_KEY must be an RSA key, got ec/);
    expect(() => chanBConfigFrom(envWith({ CHAN_B_PUBLIC_KEY: ec.publicKey.export({ type: 'spki', format: 'pem' }).toString() })))
      .toThrow(/CHAN_B_PUBLIC_KEY must be an RSA key, got ec/);
  });
});
