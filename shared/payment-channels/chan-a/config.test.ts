import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config.js';
import { chanAConfigFrom, type ChanAEnv } from './config.js';

const merchant = generateKeyPairSync('rsa', { modulusLength: 2048 });
const platform = generateKeyPairSync('rsa', { modulusLength: 2048 });
const merchantPem = merchant.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const platformPem = platform.publicKey.export({ type: 'spki', format: 'pem' }).toString();

const complete = {
  CHAN_A_MCH_ID: '1900000109',
  CHAN_A_APP_ID: 'wxd678efh567hg6787',
  CHAN_A_MERCHANT_SERIAL: '408B07E79B8269FEC3D5D3E6AB8ED163A6A380DB',
  CHAN_A_MERCHANT_PRIVATE_KEY: merchantPem,
  CHAN_A_API_V3_KEY: 'a'.repeat(32),
  CHAN_A_PLATFORM_PUBLIC_KEY: platformPem,
  CHAN_A_PLATFORM_PUBLIC_KEY_ID: 'PUB_KEY_ID_0114232134912410000000000000',
};
/** As the service sees it: through loadConfig, so defaults and trimming apply. */
const envWith = (overrides: Record<string, string | undefined> = {}): ChanAEnv => loadConfig({ ...complete, ...overrides });

describe('chanAConfigFrom', () => {
  it('is null (not configured) when no variable is set, with the base URLs defaulted', () => {
    expect(chanAConfigFrom(loadConfig({}))).toBeNull();
  });

  it.each(Object.keys(complete))('is null when only %s is missing', (name) => {
    expect(chanAConfigFrom(envWith({ [name]: undefined }))).toBeNull();
  });

  it('parses a complete configuration: keys as KeyObjects, API v3 key as its 32 UTF-8 bytes, the channel addresses', () => {
    const cfg = chanAConfigFrom(envWith())!;
    expect(cfg).toMatchObject({
      apiBaseUrl: 'https://api.mch.weixin.qq.com',
      openBaseUrl: 'https://api.weixin.qq.com',
      mchId: complete.CHAN_A_MCH_ID,
      appId: complete.CHAN_A_APP_ID,
      merchantSerial: complete.CHAN_A_MERCHANT_SERIAL,
      platformPublicKeyId: complete.CHAN_A_PLATFORM_PUBLIC_KEY_ID,
    });
    expect(cfg.merchantPrivateKey.type).toBe('private');
    expect(cfg.platformPublicKey.type).toBe('public');
    expect(cfg.platformPublicKey.export({ type: 'spki', format: 'pem' })).toBe(platformPem);
    expect(cfg.apiV3Key.equals(Buffer.from('a'.repeat(32)))).toBe(true);
  });

  it('accepts PEMs written on one line with literal \\n, and drops a trailing slash from the base URLs', () => {
    const oneLine = (pem: string) => pem.trim().split('\n').join('\\n');
    const cfg = chanAConfigFrom(envWith({
      CHAN_A_MERCHANT_PRIVATE_KEY: oneLine(merchantPem),
      CHAN_A_PLATFORM_PUBLIC_KEY: oneLine(platformPem),
      CHAN_A_API_BASE_URL: 'http://127.0.0.1:9999/',
    }))!;
    expect(oneLine(merchantPem)).not.toContain('\n');
    expect(cfg.merchantPrivateKey.export({ type: 'pkcs8', format: 'pem' })).toBe(merchantPem);
    expect(cfg.platformPublicKey.export({ type: 'spki', format: 'pem' })).toBe(platformPem);
    expect(cfg.apiBaseUrl).toBe('http://127.0.0.1:9999');
  });

  it('counts the API v3 key in UTF-8 bytes: exactly 32 passes, 31 or 33 throw', () => {
    expect(chanAConfigFrom(envWith({ CHAN_A_API_V3_KEY: `${'a'.repeat(30)}é` }))!.apiV3Key).toHaveLength(32);
    expect(() => chanAConfigFrom(envWith({ CHAN_A_API_V3_KEY: 'a'.repeat(31) }))).toThrow(/CHAN_A_API_V3_KEY.*32 bytes.*got 31/);
    expect(() => chanAConfigFrom(envWith({ CHAN_A_API_V3_KEY: `${'a'.repeat(31)}é` }))).toThrow(/got 33/);
  });

  it.each([
    ['CHAN_A_MERCHANT_PRIVATE_KEY', 'not a pem', /CHAN_A_MERCHANT_PRIVATE_KEY is not a PEM private key/],
    ['CHAN_A_MERCHANT_PRIVATE_KEY', `${merchantPem.slice(0, 300)}\n-----END PRIVATE KEY-----`, /CHAN_A_MERCHANT_PRIVATE_KEY is not a PEM private key/],
    ['CHAN_A_MERCHANT_PRIVATE_KEY', platformPem, /CHAN_A_MERCHANT_PRIVATE_KEY is not a PEM private key/],
    ['CHAN_A_PLATFORM_PUBLIC_KEY', '-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----', /CHAN_A_PLATFORM_PUBLIC_KEY is not a PEM public key/],
    ['CHAN_A_PLATFORM_PUBLIC_KEY', merchantPem, /CHAN_A_PLATFORM_PUBLIC_KEY holds a private key/],
    ['CHAN_A_PLATFORM_PUBLIC_KEY', generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ type: 'spki', format: 'pem' }).toString(), /must be an RSA key, got ec/],
    ['CHAN_A_PLATFORM_PUBLIC_KEY_ID', '0114232134912410000000000000', /must start with PUB_KEY_ID_/],
  ])('throws when %s is malformed (%#)', (name, value, message) => {
    expect(() => chanAConfigFrom(envWith({ [name]: value }))).toThrow(message);
  });
});
