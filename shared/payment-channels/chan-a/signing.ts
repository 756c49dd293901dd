import { randomBytes, sign, verify, type KeyObject } from 'node:crypto';
import type { ChanAConfig } from './config.js';

/** The only scheme of API v3: SHA256withRSA with 2048-bit keys. */
export const CHAN_A_AUTH_SCHEME = 'WECHATPAY2-SHA256-RSA2048';

export interface SigningOptions {
  /** Unix seconds; default now. */
  timestamp?: number;
  /** Default 32 random uppercase hex characters (the channel allows up to 32). */
  nonce?: string;
}

export const randomChanANonce = (): string => randomBytes(16).toString('hex').toUpperCase();
const nowSeconds = () => Math.floor(Date.now() / 1000);
const signSha256Rsa = (key: KeyObject, message: string) => sign('sha256', Buffer.from(message, 'utf8'), key).toString('base64');

/**
 * `Authorization` of a request to the channel. `pathWithQuery` and `body` must be exactly what goes
 * on the wire (the channel recomputes the message from the request it receives); body is `''` for GET.
 */
export function authorizationHeader(
  cfg: Pick<ChanAConfig, 'mchId' | 'merchantSerial' | 'merchantPrivateKey'>,
  method: string,
  pathWithQuery: string,
  body: string,
  opts: SigningOptions = {},
): string {
  const timestamp = String(opts.timestamp ?? nowSeconds());
  const nonce = opts.nonce ?? randomChanANonce();
  const signature = signSha256Rsa(cfg.merchantPrivateKey, `${method.toUpperCase()}\n${pathWithQuery}\n${timestamp}\n${nonce}\n${body}\n`);
  return `${CHAN_A_AUTH_SCHEME} mchid="${cfg.mchId}",nonce_str="${nonce}",signature="${signature}",timestamp="${timestamp}",serial_no="${cfg.merchantSerial}"`;
}

/** What the page passes to `WeixinJSBridge.invoke('getBrandWCPayRequest', …)`. */
export interface JsapiPayParams {
  appId: string;
  /** Unix seconds, as a string (the bridge insists). */
  timeStamp: string;
  nonceStr: string;
  package: string;
  signType: 'RSA';
  paySign: string;
}

/** JSAPI pay parameters signed with the merchant key (API v3 form, not the older v2 MD5/HMAC). */
export function jsapiPayParams(
  cfg: Pick<ChanAConfig, 'appId' | 'merchantPrivateKey'>,
  prepayId: string,
  opts: SigningOptions = {},
): JsapiPayParams {
  const timeStamp = String(opts.timestamp ?? nowSeconds());
  const nonceStr = opts.nonce ?? randomChanANonce();
  const pkg = `prepay_id=${prepayId}`;
  const paySign = signSha256Rsa(cfg.merchantPrivateKey, `${cfg.appId}\n${timeStamp}\n${nonceStr}\n${pkg}\n`);
  return { appId: cfg.appId, timeStamp, nonceStr, package: pkg, signType: 'RSA', paySign };
}

/**
 * Checks a channel signature (responses and notifications) over `${timestamp}\n${nonce}\n${body}\n`.
 * `body` should be the raw bytes received: re-serialised JSON would not match. Never throws: a
 * malformed signature (e.g. a `WECHATPAY/SIGNTEST/` probe) is simply not valid.
 */
export function verifyChanASignature(
  publicKey: KeyObject,
  timestamp: string,
  nonce: string,
  body: string | Buffer,
  signatureB64: string,
): boolean {
  const message = Buffer.concat([
    Buffer.from(`${timestamp}\n${nonce}\n`, 'utf8'),
    typeof body === 'string' ? Buffer.from(body, 'utf8') : body,
    Buffer.from('\n', 'utf8'),
  ]);
  try {
    return verify('sha256', message, publicKey, Buffer.from(signatureB64, 'base64'));
  } catch {
    return false;
  }
}
