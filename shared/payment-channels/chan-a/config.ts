import type { KeyObject } from 'node:crypto';
import type { Config } from '../../config.js';
import { parsedOncePer } from '../channel-settings.js';
import { parseRsaPrivateKey, parseRsaPublicKey } from '../rsa-keys.js';

/** chan_a (WeChat Pay API v3) settings, parsed once: keys as KeyObjects, the API v3 key as bytes. */
export interface ChanAConfig {
  /** Merchant API origin (`https://api.mch.weixin.qq.com`), without a trailing slash. */
  apiBaseUrl: string;
  /** Official-account API origin (OAuth, JS-SDK ticket), without a trailing slash. */
  openBaseUrl: string;
  mchId: string;
  appId: string;
  /** Serial number of the merchant API certificate: `serial_no` of our Authorization header. */
  merchantSerial: string;
  /** Signs our requests and the JSAPI `paySign`. */
  merchantPrivateKey: KeyObject;
  /** AES-256-GCM key of notification resources: exactly 32 bytes. */
  apiV3Key: Buffer;
  /** Verifies the channel's responses and notifications. */
  platformPublicKey: KeyObject;
  /** `PUB_KEY_ID_…`: the only `Wechatpay-Serial` we accept. */
  platformPublicKeyId: string;
}

export type ChanAEnv = Pick<Config,
  | 'CHAN_A_API_BASE_URL' | 'CHAN_A_OPEN_BASE_URL' | 'CHAN_A_MCH_ID' | 'CHAN_A_APP_ID' | 'CHAN_A_MERCHANT_SERIAL'
  | 'CHAN_A_MERCHANT_PRIVATE_KEY' | 'CHAN_A_API_V3_KEY' | 'CHAN_A_PLATFORM_PUBLIC_KEY' | 'CHAN_A_PLATFORM_PUBLIC_KEY_ID'>;

const PUBLIC_KEY_ID_PREFIX = 'PUB_KEY_ID_';

/**
 * The channel's settings, or null when it is not configured (any merchant variable missing: the
 * pay endpoints then answer 503 NOT_CONFIGURED). A value that is present but malformed throws, so
 * a broken key fails at start-up rather than on the first payment.
 */
export function chanAConfigFrom(env: ChanAEnv): ChanAConfig | null {
  const {
    CHAN_A_MCH_ID: mchId, CHAN_A_APP_ID: appId, CHAN_A_MERCHANT_SERIAL: merchantSerial,
    CHAN_A_MERCHANT_PRIVATE_KEY: privatePem, CHAN_A_API_V3_KEY: apiV3KeyText,
    CHAN_A_PLATFORM_PUBLIC_KEY: publicPem, CHAN_A_PLATFORM_PUBLIC_KEY_ID: platformPublicKeyId,
  } = env;
  if (!mchId || !appId || !merchantSerial || !privatePem || !apiV3KeyText || !publicPem || !platformPublicKeyId) return null;

  const apiV3Key = Buffer.from(apiV3KeyText, 'utf8');
  if (apiV3Key.length !== 32) {
    throw new Error(`CHAN_A_API_V3_KEY must be exactly 32 bytes (UTF-8), got ${apiV3Key.length}`);
  }
  if (!platformPublicKeyId.startsWith(PUBLIC_KEY_ID_PREFIX)) {
    throw new Error(`CHAN_A_PLATFORM_PUBLIC_KEY_ID must start with ${PUBLIC_KEY_ID_PREFIX}`);
  }
  return {
    apiBaseUrl: withoutTrailingSlash(env.CHAN_A_API_BASE_URL),
    openBaseUrl: withoutTrailingSlash(env.CHAN_A_OPEN_BASE_URL),
    mchId,
    appId,
    merchantSerial,
    merchantPrivateKey: parseRsaPrivateKey('CHAN_A_MERCHANT_PRIVATE_KEY', privatePem),
    apiV3Key,
    platformPublicKey: parseRsaPublicKey('CHAN_A_PLATFORM_PUBLIC_KEY', publicPem),
    platformPublicKeyId,
  };
}


const withoutTrailingSlash = (url: string) => url.replace(/\/+$/, '');

/** `chanAConfigFrom`, parsed once per configuration object: what requests and activities read. */
export const chanAConfigOf = parsedOncePer(chanAConfigFrom);
