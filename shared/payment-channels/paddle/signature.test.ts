import { createHmac } from 'node:crypto';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { constantTimeEqual } from '../../crypto.js';
import {
  PADDLE_TIMESTAMP_TOLERANCE_SECONDS, paddleSignature, signPaddleWebhook, verifyPaddleWebhook,
} from './signature.js';
import type { WebhookHeaders } from '../webhook-headers.js';
import { refusalOf as refusal } from '../../../test/harness/webhook-refusal.js';

// A pass-through spy: the verifier must compare signatures with constantTimeEqual.
vi.mock('../../crypto.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../crypto.js')>();
  return { ...actual, constantTimeEqual: vi.fn(actual.constantTimeEqual) };
});

const secret = 'pdl_ntfset_01hv8x2a7bz5k6p9q3r4s5t6v7_YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXo=';
const ts = 1_700_000_000;
const now = ts * 1000;
const body = Buffer.from(JSON.stringify({
  event_id: 'evt_01hv8x2a7bz5k6p9q3r4s5t6v7', event_type: 'transaction.completed', occurred_at: '2023-11-14T22:13:20.000Z',
  data: { id: 'txn_01hv8x2a7bz5k6p9q3r4s5t6v7', status: 'completed', custom_data: { orderId: 'ORD-1', note: '桌面机器人' } },
}));
/** Built by hand with node:crypto so the wire format is pinned independently of signPaddleWebhook. */
const h1 = (key: string, t: number | string, raw: Buffer) => createHmac('sha256', key).update(Buffer.concat([Buffer.from(`${t}:`), raw])).digest('hex');
const headersFor = (value: string): WebhookHeaders => ({ 'Paddle-Signature': value });
const verify = (value: string, raw = body, atMs = now) => () => verifyPaddleWebhook(secret, headersFor(value), raw, atMs);

describe('paddle signature', () => {
  beforeEach(() => {
    vi.mocked(constantTimeEqual).mockClear();
  });

  it('matches the official SDK test vector (VALID_SECRET, ts=1698796800)', () => {
    expect(paddleSignature('VALID_SECRET', 1698796800, '{"data": ["1", "2"]}')).toBe('a300428748dce5c70e4da19bffd60769591ea969c99dea3105d0ec9612cf43f9');
    const header = 'ts=1698796800;h1=a300428748dce5c70e4da19bffd60769591ea969c99dea3105d0ec9612cf43f9';
    expect(verifyPaddleWebhook('VALID_SECRET', headersFor(header), Buffer.from('{"data": ["1", "2"]}'), 1698796800_000)).toEqual({ timestampSeconds: 1698796800 });
    // The SDK's "more space" case: a re-serialised body does not verify.
    expect(refusal(() => verifyPaddleWebhook('VALID_SECRET', headersFor(header), Buffer.from('{ "data": [ "1", "2" ]}'), 1698796800_000))).toBe('bad_signature');
  });

  it('accepts a valid delivery, whatever the header name case; signPaddleWebhook writes ts=…;h1=…', () => {
    const value = signPaddleWebhook(secret, body, ts);
    expect(value).toBe(`ts=${ts};h1=${h1(secret, ts, body)}`);
    expect(verify(value)()).toEqual({ timestampSeconds: ts });
    expect(verifyPaddleWebhook(secret, { 'paddle-signature': value }, body, now)).toEqual({ timestampSeconds: ts });
    expect(verifyPaddleWebhook(secret, { 'PADDLE-SIGNATURE': [value] }, body, now)).toEqual({ timestampSeconds: ts });
  });

  it('uses the secret verbatim as the HMAC key (UTF-8 bytes, no decoding)', () => {
    const unicode = 'pdl_ntfset_sécret';
    expect(paddleSignature(unicode, ts, body)).toBe(createHmac('sha256', Buffer.from(unicode, 'utf8')).update(`${ts}:`).update(body).digest('hex'));
  });

  it('refuses every single-bit flip of the body', () => {
    const value = signPaddleWebhook(secret, body, ts);
    for (let bit = 0; bit < body.length * 8; bit += 1) {
      const flipped = Buffer.from(body);
      flipped[bit >> 3]! ^= 1 << (bit & 7);
      expect(refusal(verify(value, flipped)), `bit ${bit}`).toBe('bad_signature');
    }
  });

  it('verifies the bytes, not their UTF-8 reading (two invalid sequences differ)', () => {
    const raw = Buffer.from([0x7b, 0xff, 0x7d]);
    const other = Buffer.from([0x7b, 0xfe, 0x7d]);
    expect(raw.toString()).toBe(other.toString());
    const value = signPaddleWebhook(secret, raw, ts);
    expect(verify(value, raw)()).toEqual({ timestampSeconds: ts });
    expect(refusal(verify(value, other))).toBe('bad_signature');
  });

  it('refuses a wrong secret, a flipped signature, a signature for another ts', () => {
    expect(refusal(verify(signPaddleWebhook('pdl_ntfset_other', body, ts)))).toBe('bad_signature');
    const good = h1(secret, ts, body);
    const flipped = (good[0] === '0' ? '1' : '0') + good.slice(1);
    expect(refusal(verify(`ts=${ts};h1=${flipped}`))).toBe('bad_signature');
    expect(refusal(verify(`ts=${ts};h1=${good.toUpperCase()}`))).toBe('bad_signature');
    expect(refusal(verify(`ts=${ts};h1=${good.slice(0, 63)}`))).toBe('bad_signature');
    expect(refusal(verify(`ts=${ts + 1};h1=${good}`))).toBe('bad_signature');
  });

  it.each<[string, WebhookHeaders]>([
    ['no header', {}],
    ['an empty header', { 'Paddle-Signature': '' }],
    ['a blank header', { 'Paddle-Signature': '  ' }],
    ['an undefined header', { 'Paddle-Signature': undefined }],
  ])('refuses %s as missing_header', (_, headers) => {
    expect(refusal(() => verifyPaddleWebhook(secret, headers, body, now))).toBe('missing_header');
  });

  it.each([
    ['no key=value parts', 'invalid_header'],
    ['no ts', `h1=${'0'.repeat(64)}`],
    ['no h1', `ts=${ts};h2=abc`],
    ['an empty h1', `ts=${ts};h1=`],
    ['an empty ts', `ts=;h1=${'0'.repeat(64)}`],
    ['a ts that is not seconds', `ts=1.7e9;h1=${'0'.repeat(64)}`],
    ['a negative ts', `ts=-${ts};h1=${'0'.repeat(64)}`],
    ['two ts', `ts=${ts};ts=${ts};h1=${'0'.repeat(64)}`],
    ['a part without =', `ts=${ts};h1;h1=${'0'.repeat(64)}`],
    ['an empty key', `ts=${ts};=x;h1=${'0'.repeat(64)}`],
  ])('refuses a header with %s as malformed_header', (_, value) => {
    expect(refusal(verify(value))).toBe('malformed_header');
  });

  it('refuses a repeated header (several values) as malformed_header', () => {
    const value = signPaddleWebhook(secret, body, ts);
    expect(refusal(() => verifyPaddleWebhook(secret, { 'Paddle-Signature': [value, value] }, body, now))).toBe('malformed_header');
  });

  it('ignores unknown parts, spaces around parts and a trailing semicolon', () => {
    const good = h1(secret, ts, body);
    expect(verify(`h2=whatever;ts=${ts};future=1;h1=${good};`)()).toEqual({ timestampSeconds: ts });
    expect(verify(` ts = ${ts} ; h1 = ${good} `)()).toEqual({ timestampSeconds: ts });
  });

  it(`accepts ${PADDLE_TIMESTAMP_TOLERANCE_SECONDS} s either side of now and refuses 6 s (stale or from the future)`, () => {
    const value = signPaddleWebhook(secret, body, ts);
    expect(PADDLE_TIMESTAMP_TOLERANCE_SECONDS).toBe(5);
    for (const offsetMs of [0, 4_999, 5_000, -5_000]) expect(verify(value, body, now + offsetMs)()).toEqual({ timestampSeconds: ts });
    expect(refusal(verify(value, body, now + 6_000))).toBe('timestamp_out_of_window');
    expect(refusal(verify(value, body, now + 5_001))).toBe('timestamp_out_of_window');
    // From the future: the SDK would accept it; we refuse beyond the same 5 s.
    expect(refusal(verify(value, body, now - 6_000))).toBe('timestamp_out_of_window');
    expect(refusal(verify(value, body, now - 3_600_000))).toBe('timestamp_out_of_window');
  });

  it('checks the window before the signature (a stale, wrongly signed delivery is out_of_window)', () => {
    expect(refusal(verify(signPaddleWebhook('pdl_ntfset_other', body, ts), body, now + 60_000))).toBe('timestamp_out_of_window');
  });

  it('accepts any matching h1 during a rotation (the second one valid, or the first)', () => {
    const old = h1('pdl_ntfset_old', ts, body);
    const current = h1(secret, ts, body);
    expect(verify(`ts=${ts};h1=${old};h1=${current}`)()).toEqual({ timestampSeconds: ts });
    expect(verify(`ts=${ts};h1=${current};h1=${old}`)()).toEqual({ timestampSeconds: ts });
    expect(verify(signPaddleWebhook(['pdl_ntfset_old', secret], body, ts))()).toEqual({ timestampSeconds: ts });
    expect(refusal(verify(signPaddleWebhook(['pdl_ntfset_old', 'pdl_ntfset_older'], body, ts)))).toBe('bad_signature');
  });

  it('compares every candidate with constantTimeEqual (no early exit, no ===)', () => {
    const current = h1(secret, ts, body);
    const old = h1('pdl_ntfset_old', ts, body);
    verify(`ts=${ts};h1=${current};h1=${old};h1=short`)();
    expect(vi.mocked(constantTimeEqual).mock.calls).toEqual([[current, current], [old, current], ['short', current]]);
  });

  it('refuses to work with an empty secret (a configuration error, not a refusal)', () => {
    expect(() => verifyPaddleWebhook('', headersFor(signPaddleWebhook('x', body, ts)), body, now)).toThrow('secret is empty');
    expect(() => signPaddleWebhook('', body, ts)).toThrow('secret is empty');
  });
});
