import { createHmac } from 'node:crypto';
import { constantTimeEqual } from '../crypto.js';
import { singleHeader, WebhookVerificationError, type WebhookHeaders } from './webhook-headers.js';

// The `manual` and `mock` channels' signature: Standard Webhooks (protocols.md "manual and mock",
// CONTRACTS.md "Payment channels"). Headers `webhook-id`, `webhook-timestamp` (unix seconds) and
// `webhook-signature`: space-separated `v1,<base64 HMAC-SHA256(key, `${id}.${timestamp}.${body}`)>`
// (several while a secret rotates; other versions such as `v1a` are ignored). `X-Signature` may carry
// the same `v1,…` value(s) instead of `webhook-signature`.
//
// Our own ~50 lines rather than the npm package `standardwebhooks`: its `sign` turns a Buffer body into
// a string (`payload.toString()`), so bodies that are not valid UTF-8 are not verified byte for byte
// (different bytes can share a signature); it reads only `webhook-signature` (no `X-Signature`); a
// secret without `whsec_` is base64-decoded rather than taken as UTF-8 bytes (CONTRACTS.md); its clock
// is `Date.now()` only; and its errors carry a message, not a reason.

/** The reference libraries' tolerance, both ways: |now − timestamp| ≤ 5 minutes. */
export const STANDARD_WEBHOOKS_TOLERANCE_SECONDS = 5 * 60;

const SECRET_PREFIX = 'whsec_';
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * The HMAC key of a secret (`PAYMENT_WEBHOOK_SECRET`): the base64-decoded rest when it starts
 * `whsec_`, its UTF-8 bytes otherwise. Throws on an empty key or a `whsec_` rest that is not base64
 * (configuration errors, not refusals).
 */
export function standardWebhooksKey(secret: string): Buffer {
  if (secret.startsWith(SECRET_PREFIX)) {
    const rest = secret.slice(SECRET_PREFIX.length);
    if (!BASE64.test(rest)) throw new Error('the webhook secret after whsec_ is not base64');
    const key = Buffer.from(rest, 'base64');
    if (key.length === 0) throw new Error('the webhook secret after whsec_ decodes to no bytes');
    return key;
  }
  if (secret.length === 0) throw new Error('the webhook secret is empty');
  return Buffer.from(secret, 'utf8');
}

/** `v1,<base64>`: the signature of a delivery with one secret. */
export function signStandardWebhook(secret: string, id: string, timestampSeconds: number | string, rawBody: Buffer | string): string {
  const mac = createHmac('sha256', standardWebhooksKey(secret))
    .update(`${id}.${timestampSeconds}.`, 'utf8')
    .update(typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : rawBody)
    .digest('base64');
  return `v1,${mac}`;
}

/**
 * The headers of a delivery as the channel sends it (for tests, the bench and the test harness): one
 * signature per secret, space-separated, in `webhook-signature` or (`via: 'x-signature'`) `X-Signature`.
 */
export function standardWebhookHeaders(
  secrets: string | readonly string[],
  rawBody: Buffer | string,
  opts: { id: string; timestampSeconds?: number; via?: 'webhook-signature' | 'x-signature' },
): Record<string, string> {
  const timestampSeconds = opts.timestampSeconds ?? Math.floor(Date.now() / 1000);
  const list = typeof secrets === 'string' ? [secrets] : secrets;
  const signature = list.map((secret) => signStandardWebhook(secret, opts.id, timestampSeconds, rawBody)).join(' ');
  return {
    'webhook-id': opts.id,
    'webhook-timestamp': String(timestampSeconds),
    [opts.via === 'x-signature' ? 'X-Signature' : 'webhook-signature']: signature,
  };
}

/**
 * Verifies a delivery; throws WebhookVerificationError otherwise. `rawBody` must be the
 * bytes as received (never re-serialised JSON). Returns the event id (the idempotency key) and the
 * signed timestamp. The signatures are those of `webhook-signature`, or of `X-Signature` when
 * `webhook-signature` is absent; any `v1` among them that matches is enough.
 */
export function verifyStandardWebhook(
  secret: string,
  headers: WebhookHeaders,
  rawBody: Buffer,
  nowMs = Date.now(),
): { id: string; timestampSeconds: number } {
  const key = standardWebhooksKey(secret);
  const id = singleHeader(headers, 'webhook-id');
  const timestamp = singleHeader(headers, 'webhook-timestamp');
  // `X-Signature` stands in for an absent `webhook-signature`; next to one it is ignored.
  const webhookSignature = singleHeader(headers, 'webhook-signature');
  const signatures = webhookSignature === undefined ? singleHeader(headers, 'x-signature') : webhookSignature;
  if (id === null || timestamp === null || signatures === null) {
    throw new WebhookVerificationError('malformed_header', 'a webhook header appears more than once');
  }
  if (!id || !timestamp || !signatures) {
    throw new WebhookVerificationError('missing_header', 'webhook-id, webhook-timestamp and webhook-signature (or X-Signature) are required');
  }
  const candidates: string[] = [];
  for (const entry of signatures.split(' ').filter(Boolean)) {
    const comma = entry.indexOf(',');
    if (comma <= 0 || comma === entry.length - 1) {
      throw new WebhookVerificationError('malformed_header', `signature "${entry.slice(0, 32)}" is not <version>,<signature>`);
    }
    if (entry.slice(0, comma) === 'v1') candidates.push(entry.slice(comma + 1));
  }
  if (!/^\d{1,15}$/.test(timestamp)) {
    throw new WebhookVerificationError('malformed_header', `webhook-timestamp "${timestamp.slice(0, 32)}" is not unix seconds`);
  }
  const timestampSeconds = Number(timestamp);
  if (Math.abs(nowMs - timestampSeconds * 1000) > STANDARD_WEBHOOKS_TOLERANCE_SECONDS * 1000) {
    throw new WebhookVerificationError('timestamp_out_of_window', `webhook-timestamp ${timestamp} is not within ${STANDARD_WEBHOOKS_TOLERANCE_SECONDS} s of now`);
  }
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.`, 'utf8').update(rawBody).digest('base64');
  // Every candidate is compared (no early exit), each in constant time.
  let matched = false;
  for (const candidate of candidates) matched = constantTimeEqual(candidate, expected) || matched;
  if (!matched) throw new WebhookVerificationError('bad_signature', 'no v1 signature matches the body');
  return { id, timestampSeconds };
}
