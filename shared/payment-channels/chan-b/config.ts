import type { KeyObject } from 'node:crypto';
import type { Config } from '../../config.js';
import { parsedOncePer } from '../channel-settings.js';
import { parseRsaPrivateKey, parseRsaPublicKey } from '../rsa-keys.js';

/** chan_b (Alipay open platform, RSA2) settings, parsed once: keys as KeyObjects. */
export interface ChanBConfig {
  /** The open-platform gateway (`https://openapi.alipay.com/gateway.do`): pay URLs are `${gatewayUrl}?…`. */
  gatewayUrl: string;
  appId: string;
  /** Signs our requests (the `sign` of a pay URL). */
  appPrivateKey: KeyObject;
  /** The channel's public key: verifies its asynchronous notifications. */
  channelPublicKey: KeyObject;
}

export type ChanBEnv = Pick<Config, 'CHAN_B_GATEWAY_URL' | 'CHAN_B_APP_ID' | 'CHAN_B_APP_PRIVATE_KEY' | 'CHAN_B_PUBLIC_KEY'>;

/**
 * The channel's settings, or null when it is not configured (the app id or either key missing: the
 * pay endpoint then answers 503 NOT_CONFIGURED, the notification route FAIL). A value that is present
 * but malformed throws with the variable's name, so a broken key fails loudly rather than quietly.
 *
 * Keys are PEM (`\n` escapes allowed, as env files carry them on one line). The channel's console
 * hands out bare base64 bodies; those are accepted too (PKCS#8 private key, SPKI public key).
 */
export function chanBConfigFrom(env: ChanBEnv): ChanBConfig | null {
  const { CHAN_B_APP_ID: appId, CHAN_B_APP_PRIVATE_KEY: privatePem, CHAN_B_PUBLIC_KEY: publicPem } = env;
  if (!appId || !privatePem || !publicPem) return null;
  return {
    gatewayUrl: env.CHAN_B_GATEWAY_URL,
    appId,
    appPrivateKey: parseRsaPrivateKey('CHAN_B_APP_PRIVATE_KEY', privatePem),
    channelPublicKey: parseRsaPublicKey('CHAN_B_PUBLIC_KEY', publicPem),
  };
}


/** `chanBConfigFrom`, parsed once per configuration object: what requests read. */
export const chanBConfigOf = parsedOncePer(chanBConfigFrom);
