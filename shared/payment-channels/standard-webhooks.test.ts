import { createHmac } from 'node:crypto';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { constantTimeEqual } from '../crypto.js';
import {
  STANDARD_WEBHOOKS_TOLERANCE_SECONDS, signStandardWebhook, standardWebhookHeaders, standardWebhooksKey, verifyStandardWebhook,
} from './standard-webhooks.js';
import type { WebhookHeaders } from './webhook-headers.js';
import { refusalOf as refusal } from '../../test/harness/webhook-refusal.js';

// A pass-through spy: the verifier must compare signatures with constantTimeEqual.
vi.mock('../crypto.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../crypto.js')>();
  return { ...actual, constantTimeEqual: vi.fn(actual.constantTimeEqual) };
});

const secret = 'a-plain-payment-webhook-secret';
const id = 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W';
const ts = 1_700_000_000;
const now = ts * 1000;
const body = Buffer.from(JSON.stringify({ provider_order_id: 'ORD-1', status: 'success', amount: 19900, currency: 'CNY', note: '桌面机器人' }));
/** Built by hand with node:crypto so the wire format is pinned independently of signStandardWebhook. */
const v1 = (key: Buffer | string, msgId: string, t: number | string, raw: Buffer) =>
  `v1,${createHmac('sha256', key).update(Buffer.concat([Buffer.from(`${msgId}.${t}.`), raw])).digest('base64')}`;
const headersWith = (signature: string, extra: WebhookHeaders = {}): WebhookHeaders =>
  ({ 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': signature, ...extra });
const verify = (headers: WebhookHeaders, raw = body, atMs = now) => () => verifyStandardWebhook(secret, headers, raw, atMs);
const ok = { id, timestampSeconds: ts };

describe('Standard Webhooks signature (manual, mock)', () => {
  beforeEach(() => {
    vi.mocked(constantTimeEqual).mockClear();
  });

  it('matches the published example (whsec_ secret, msg_p5jXN8AQM9LWM0D4loKWxJek, 1614265330)', () => {
    const whsec = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const payload = Buffer.from('{"test": 2432232314}');
    const expected = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';
    expect(signStandardWebhook(whsec, 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, payload)).toBe(expected);
    const headers = { 'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek', 'webhook-timestamp': '1614265330', 'webhook-signature': expected };
    expect(verifyStandardWebhook(whsec, headers, payload, 1614265330_000)).toEqual({ id: 'msg_p5jXN8AQM9LWM0D4loKWxJek', timestampSeconds: 1614265330 });
  });

  it('derives the key: whsec_ → base64-decoded rest; otherwise the UTF-8 bytes (even if it looks like base64)', () => {
    expect(standardWebhooksKey('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')).toEqual(Buffer.from('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'base64'));
    expect(standardWebhooksKey('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')).toEqual(Buffer.from('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'utf8'));
    expect(standardWebhooksKey('sécret')).toEqual(Buffer.from('sécret', 'utf8'));
    expect(signStandardWebhook('sécret', id, ts, body)).toBe(v1(Buffer.from('sécret', 'utf8'), id, ts, body));
    // The same text with and without the prefix are different keys.
    expect(signStandardWebhook('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', id, ts, body)).not.toBe(signStandardWebhook('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', id, ts, body));
  });

  it('refuses to work with an empty or undecodable secret (configuration errors, not refusals)', () => {
    for (const bad of ['', 'whsec_', 'whsec_not base64!', 'whsec_A']) expect(() => standardWebhooksKey(bad), bad).toThrow();
    expect(() => verifyStandardWebhook('', headersWith(v1(secret, id, ts, body)), body, now)).toThrow('secret is empty');
  });

  it('verifies a delivery signed with a whsec_ secret', () => {
    const whsec = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`;
    const headers = headersWith(v1(Buffer.from('0123456789abcdef0123456789abcdef'), id, ts, body));
    expect(verifyStandardWebhook(whsec, headers, body, now)).toEqual(ok);
    expect(refusal(() => verifyStandardWebhook(whsec.slice(6), headers, body, now))).toBe('bad_signature');
  });

  it('accepts a valid delivery, whatever the header name case; standardWebhookHeaders writes the three headers', () => {
    const headers = standardWebhookHeaders(secret, body, { id, timestampSeconds: ts });
    expect(headers).toEqual({ 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': v1(secret, id, ts, body) });
    expect(verify(headers)()).toEqual(ok);
    const upper = { 'Webhook-Id': id, 'WEBHOOK-TIMESTAMP': [String(ts)], 'Webhook-Signature': v1(secret, id, ts, body) };
    expect(verify(upper)()).toEqual(ok);
  });

  it('accepts X-Signature alone; next to webhook-signature, X-Signature is ignored', () => {
    const xOnly = standardWebhookHeaders(secret, body, { id, timestampSeconds: ts, via: 'x-signature' });
    expect(xOnly).toEqual({ 'webhook-id': id, 'webhook-timestamp': String(ts), 'X-Signature': v1(secret, id, ts, body) });
    expect(verify(xOnly)()).toEqual(ok);
    expect(verify({ 'webhook-id': id, 'webhook-timestamp': String(ts), 'x-signature': v1(secret, id, ts, body) })()).toEqual(ok);
    expect(refusal(verify(headersWith(v1('other', id, ts, body), { 'X-Signature': v1(secret, id, ts, body) })))).toBe('bad_signature');
    expect(verify(headersWith(v1(secret, id, ts, body), { 'X-Signature': v1('other', id, ts, body) }))()).toEqual(ok);
    expect(verify(headersWith(v1(secret, id, ts, body), { 'X-Signature': 'sha256=0123abcd' }))()).toEqual(ok);
    expect(verify(headersWith(v1(secret, id, ts, body), { 'X-Signature': ['a', 'b'] }))()).toEqual(ok);
    expect(refusal(verify({ 'webhook-id': id, 'webhook-timestamp': String(ts), 'X-Signature': v1('other', id, ts, body) }))).toBe('bad_signature');
  });

  it('refuses every single-bit flip of the body', () => {
    const headers = headersWith(v1(secret, id, ts, body));
    for (let bit = 0; bit < body.length * 8; bit += 1) {
      const flipped = Buffer.from(body);
      flipped[bit >> 3]! ^= 1 << (bit & 7);
      expect(refusal(verify(headers, flipped)), `bit ${bit}`).toBe('bad_signature');
    }
  });

  it('verifies the bytes, not their UTF-8 reading (two invalid sequences differ)', () => {
    const raw = Buffer.from([0x7b, 0xff, 0x7d]);
    const other = Buffer.from([0x7b, 0xfe, 0x7d]);
    expect(raw.toString()).toBe(other.toString());
    const headers = standardWebhookHeaders(secret, raw, { id, timestampSeconds: ts });
    expect(verify(headers, raw)()).toEqual(ok);
    expect(refusal(verify(headers, other))).toBe('bad_signature');
  });

  it('refuses a wrong secret, a flipped signature, another id, another timestamp', () => {
    expect(refusal(verify(headersWith(v1('another-secret', id, ts, body))))).toBe('bad_signature');
    const good = v1(secret, id, ts, body);
    const flipped = Buffer.from(good.slice(3), 'base64');
    flipped[0]! ^= 1;
    expect(refusal(verify(headersWith(`v1,${flipped.toString('base64')}`)))).toBe('bad_signature');
    expect(refusal(verify(headersWith(good, { 'webhook-id': 'msg_other' })))).toBe('bad_signature');
    expect(refusal(verify(headersWith(good, { 'webhook-timestamp': String(ts + 1) })))).toBe('bad_signature');
  });

  it('ignores other versions; a header with no v1 signature is bad_signature', () => {
    const good = v1(secret, id, ts, body);
    expect(verify(headersWith(`v1a,${'A'.repeat(86)}== ${good}`))()).toEqual(ok);
    expect(refusal(verify(headersWith(`v2,${good.slice(3)}`)))).toBe('bad_signature');
  });

  it.each<[string, WebhookHeaders]>([
    ['no webhook-id', { 'webhook-timestamp': String(ts), 'webhook-signature': 'v1,x' }],
    ['no webhook-timestamp', { 'webhook-id': id, 'webhook-signature': 'v1,x' }],
    ['no signature header', { 'webhook-id': id, 'webhook-timestamp': String(ts) }],
    ['an empty webhook-signature and no X-Signature', { 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': '', 'X-Signature': ' ' }],
    ['an empty webhook-id', { 'webhook-id': '', 'webhook-timestamp': String(ts), 'webhook-signature': 'v1,x' }],
    ['no headers at all', {}],
  ])('refuses %s as missing_header', (_, headers) => {
    expect(refusal(verify(headers))).toBe('missing_header');
  });

  it.each<[string, WebhookHeaders]>([
    ['a signature without a version', headersWith('K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=')],
    ['an empty signature after v1,', headersWith('v1,')],
    ['an empty version', headersWith(',K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=')],
    ['a malformed X-Signature alone', { 'webhook-id': id, 'webhook-timestamp': String(ts), 'X-Signature': 'garbage' }],
    ['a repeated webhook-signature next to a valid X-Signature', headersWith('', { 'webhook-signature': ['v1,a', 'v1,b'], 'X-Signature': v1(secret, id, ts, body) })],
    ['a repeated X-Signature alone', { 'webhook-id': id, 'webhook-timestamp': String(ts), 'X-Signature': ['v1,a', 'v1,b'] }],
    ['a timestamp that is not seconds', headersWith(v1(secret, id, ts, body), { 'webhook-timestamp': '1.7e9' })],
    ['a timestamp in milliseconds with a dot', headersWith(v1(secret, id, ts, body), { 'webhook-timestamp': `${ts}.000` })],
    ['a negative timestamp', headersWith(v1(secret, id, ts, body), { 'webhook-timestamp': `-${ts}` })],
    ['a repeated webhook-id', headersWith(v1(secret, id, ts, body), { 'webhook-id': [id, id] })],
    ['a repeated webhook-signature', headersWith('', { 'webhook-signature': [v1(secret, id, ts, body), v1(secret, id, ts, body)] })],
  ])('refuses %s as malformed_header', (_, headers) => {
    expect(refusal(verify(headers))).toBe('malformed_header');
  });

  it('tolerates several spaces between signatures', () => {
    expect(verify(headersWith(`  v1,${'A'.repeat(43)}=    ${v1(secret, id, ts, body)}  `))()).toEqual(ok);
  });

  it('accepts 5 minutes either side of now and refuses 5 min + 1 s (stale or from the future)', () => {
    const headers = headersWith(v1(secret, id, ts, body));
    expect(STANDARD_WEBHOOKS_TOLERANCE_SECONDS).toBe(300);
    for (const offsetMs of [0, 299_000, 300_000, -300_000]) expect(verify(headers, body, now + offsetMs)()).toEqual(ok);
    expect(refusal(verify(headers, body, now + 301_000))).toBe('timestamp_out_of_window');
    expect(refusal(verify(headers, body, now - 301_000))).toBe('timestamp_out_of_window');
    expect(refusal(verify(headers, body, now + 86_400_000))).toBe('timestamp_out_of_window');
  });

  it('checks the window before the signature (a stale, wrongly signed delivery is out_of_window)', () => {
    expect(refusal(verify(headersWith(v1('other', id, ts, body)), body, now + 600_000))).toBe('timestamp_out_of_window');
  });

  it('accepts any matching v1 during a rotation (the second one valid, or the first)', () => {
    const old = v1('old-secret', id, ts, body);
    const current = v1(secret, id, ts, body);
    expect(verify(headersWith(`${old} ${current}`))()).toEqual(ok);
    expect(verify(headersWith(`${current} ${old}`))()).toEqual(ok);
    expect(verify(standardWebhookHeaders(['old-secret', secret], body, { id, timestampSeconds: ts }))()).toEqual(ok);
    expect(verify(standardWebhookHeaders(['old-secret', secret], body, { id, timestampSeconds: ts, via: 'x-signature' }))()).toEqual(ok);
    expect(refusal(verify(standardWebhookHeaders(['old-secret', 'older-secret'], body, { id, timestampSeconds: ts })))).toBe('bad_signature');
  });

  it('compares every v1 candidate with constantTimeEqual (no early exit, no ===)', () => {
    const current = v1(secret, id, ts, body).slice(3);
    const old = v1('old-secret', id, ts, body).slice(3);
    verify(headersWith(`v1,${current} v1a,ignored v1,${old} v1,short`))();
    expect(vi.mocked(constantTimeEqual).mock.calls).toEqual([[current, current], [old, current], ['short', current]]);
  });

  it('defaults the timestamp of standardWebhookHeaders to now', () => {
    const headers = standardWebhookHeaders(secret, body, { id });
    expect(Math.abs(Number(headers['webhook-timestamp']) * 1000 - Date.now())).toBeLessThan(5_000);
    expect(verifyStandardWebhook(secret, headers, body)).toMatchObject({ id });
  });
});
