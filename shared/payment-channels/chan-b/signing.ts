import { sign, verify, type KeyObject } from 'node:crypto';

// chan_b's RSA2 (protocols.md "chan_b"): SHA256withRSA, base64, over the signing string of a
// parameter set. Requests we send are signed over every parameter but `sign`; the channel's
// notifications are verified over every parameter but `sign` and `sign_type`.

export type ChanBParams = Readonly<Record<string, string | undefined>>;

/**
 * The signing string: the parameters without the excluded keys and without empty values, sorted by
 * key (code-unit order, as the channel sorts), `k=v` joined with `&`, values as decoded (no escaping).
 */
export function chanBSigningString(params: ChanBParams, purpose: 'request' | 'notification'): string {
  const excluded = purpose === 'request' ? ['sign'] : ['sign', 'sign_type'];
  return Object.keys(params)
    .filter((key) => !excluded.includes(key) && params[key] !== undefined && params[key] !== '')
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    .map((key) => `${key}=${params[key]}`)
    .join('&');
}

/** The `sign` of a request we send, with our app private key. */
export function signRequest(appPrivateKey: KeyObject, params: ChanBParams): string {
  return sign('sha256', Buffer.from(chanBSigningString(params, 'request'), 'utf8'), appPrivateKey).toString('base64');
}

/**
 * Whether a notification's `sign` is the channel's over its other parameters. False for a missing or
 * malformed signature, or a `sign_type` other than RSA2 (the only scheme we ask for).
 */
export function verifyNotification(channelPublicKey: KeyObject, params: ChanBParams): boolean {
  const signature = params.sign;
  if (!signature || !/^[A-Za-z0-9+/]+=*$/.test(signature)) return false;
  if (params.sign_type !== undefined && params.sign_type !== 'RSA2') return false;
  try {
    return verify('sha256', Buffer.from(chanBSigningString(params, 'notification'), 'utf8'), channelPublicKey, Buffer.from(signature, 'base64'));
  } catch {
    return false;
  }
}

/**
 * A form body (`application/x-www-form-urlencoded`) as parameters, or null when a key repeats (a
 * signature over an ambiguous set proves nothing).
 */
export function formParams(body: string): Record<string, string> | null {
  // No prototype: a key such as `__proto__` is a parameter like any other.
  const params = Object.create(null) as Record<string, string>;
  for (const [key, value] of new URLSearchParams(body)) {
    if (Object.hasOwn(params, key)) return null;
    params[key] = value;
  }
  return params;
}
