import { createCipheriv, generateKeyPairSync, sign } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChanAServer, type ChanAServer } from '../../../test/harness/chan-a-server.js';
import { loadConfig } from '../../config.js';
import { chanAConfigFrom, type ChanAConfig } from './config.js';
import {
  ChanAVerificationError, decryptChanAResource, encryptChanAResource, verifyChanANotification,
  type ChanAHeaders, type ChanAVerificationReason,
} from './notifications.js';

function refusal(run: () => unknown): ChanAVerificationReason {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ChanAVerificationError);
    return (error as ChanAVerificationError).reason;
  }
  throw new Error('expected the notification to be refused');
}

/**
 * Built by hand with node:crypto, following the channel's documentation, so that the expected
 * wire format is pinned independently of encryptChanAResource and of the test server.
 */
describe('verifyChanANotification on a notification built by hand', () => {
  const platform = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const apiV3Key = Buffer.from('0123456789abcdefghijklmnopqrstuv', 'utf8');
  const cfg = { platformPublicKey: platform.publicKey, platformPublicKeyId: 'PUB_KEY_ID_0114000000000000000000000001', apiV3Key };
  const now = 1_700_000_000_000;

  function seal(plaintext: string, nonce: string, aad: string): string {
    const cipher = createCipheriv('aes-256-gcm', apiV3Key, Buffer.from(nonce));
    cipher.setAAD(Buffer.from(aad));
    return Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]).toString('base64');
  }
  function signed(body: string) {
    const timestamp = String(now / 1000);
    const signature = sign('sha256', Buffer.from(`${timestamp}\n8rXpUXEnDdEdAbGS\n${body}\n`), platform.privateKey).toString('base64');
    return {
      headers: { 'Wechatpay-Timestamp': timestamp, 'Wechatpay-Nonce': '8rXpUXEnDdEdAbGS', 'Wechatpay-Signature': signature, 'Wechatpay-Serial': cfg.platformPublicKeyId },
      body: Buffer.from(body),
    };
  }
  const transaction = { mchid: '1900000109', out_trade_no: 'ORDER-1', trade_state: 'SUCCESS', amount: { total: 100, payer_total: 100, currency: 'CNY' } };

  it('verifies and decrypts (tag = last 16 bytes, iv = nonce, AAD = associated_data)', () => {
    // Non-ASCII in the body: the signature is over the bytes, and the summary survives as text.
    const body = JSON.stringify({
      id: 'EV-2018022511223320873', create_time: '2015-05-20T13:29:35+08:00', resource_type: 'encrypt-resource',
      event_type: 'TRANSACTION.SUCCESS', summary: '支付成功',
      resource: { original_type: 'transaction', algorithm: 'AEAD_AES_256_GCM', ciphertext: seal(JSON.stringify(transaction), 'fdasflkja484', 'transaction'), associated_data: 'transaction', nonce: 'fdasflkja484' },
    });
    const { headers, body: raw } = signed(body);
    expect(verifyChanANotification(cfg, headers, raw, now)).toEqual({
      id: 'EV-2018022511223320873', eventType: 'TRANSACTION.SUCCESS', createTime: '2015-05-20T13:29:35+08:00', summary: '支付成功', resource: transaction,
    });
  });

  it('decrypts a resource without associated_data (AAD empty)', () => {
    const resource = { algorithm: 'AEAD_AES_256_GCM', ciphertext: seal('{"ok":true}', 'abcdefghijkl', ''), nonce: 'abcdefghijkl' };
    const body = JSON.stringify({ id: 'EV-1', create_time: 'x', event_type: 'TRANSACTION.SUCCESS', resource });
    expect(verifyChanANotification(cfg, signed(body).headers, signed(body).body, now).resource).toEqual({ ok: true });
  });

  it.each([
    ['not JSON', 'not json'],
    ['no resource', JSON.stringify({ id: 'EV-1', create_time: 'x', event_type: 'TRANSACTION.SUCCESS' })],
    ['another algorithm', JSON.stringify({ id: 'EV-1', create_time: 'x', event_type: 'E', resource: { algorithm: 'AEAD_AES_128_GCM', ciphertext: 'AA==', nonce: 'n' } })],
    ['no event_type', JSON.stringify({ id: 'EV-1', create_time: 'x', resource: { algorithm: 'AEAD_AES_256_GCM', ciphertext: 'AA==', nonce: 'n' } })],
  ])('refuses a signed body with %s as bad_body', (_, body) => {
    const { headers, body: raw } = signed(body);
    expect(refusal(() => verifyChanANotification(cfg, headers, raw, now))).toBe('bad_body');
  });

  it('refuses a resource whose plaintext is not a JSON object as decrypt_failed', () => {
    const resource = { algorithm: 'AEAD_AES_256_GCM', ciphertext: seal('[1,2]', 'abcdefghijkl', 'transaction'), nonce: 'abcdefghijkl', associated_data: 'transaction' };
    const { headers, body } = signed(JSON.stringify({ id: 'EV-1', create_time: 'x', event_type: 'E', resource }));
    expect(refusal(() => verifyChanANotification(cfg, headers, body, now))).toBe('decrypt_failed');
  });

  it('encryptChanAResource seals in the same format (round trip through a hand-written decryption)', () => {
    const sealed = encryptChanAResource(apiV3Key, transaction, { nonce: 'fdasflkja484', associatedData: 'transaction' });
    expect(sealed).toMatchObject({ algorithm: 'AEAD_AES_256_GCM', nonce: 'fdasflkja484', associated_data: 'transaction' });
    expect(sealed.ciphertext).toBe(seal(JSON.stringify(transaction), 'fdasflkja484', 'transaction'));
    expect(decryptChanAResource(apiV3Key, sealed)).toEqual(transaction);
    expect(encryptChanAResource(apiV3Key, {}).nonce).toMatch(/^[0-9a-f]{12}$/);
  });
});

describe('verifyChanANotification on notifications from the chan_a test server', () => {
  let channel: ChanAServer;
  let cfg: ChanAConfig;
  const paid = () => ({ eventType: 'TRANSACTION.SUCCESS', resource: channel.paidTransaction({ outTradeNo: 'ORDER-42', total: 1990 }) });
  /** Verifies at `now` chosen as the signing time minus the offset, so the distance is exact. */
  const verifyAtDistance = (offsetSeconds: number) => {
    const { headers, body } = channel.notification(paid(), { timestampOffsetSeconds: offsetSeconds });
    const nowMs = (Number(headers['Wechatpay-Timestamp']) - offsetSeconds) * 1000;
    return () => verifyChanANotification(cfg, headers, body, nowMs);
  };

  beforeAll(async () => {
    channel = await startChanAServer();
    cfg = chanAConfigFrom(loadConfig(channel.env))!;
  });
  afterAll(() => channel?.close());

  it('verifies and decrypts a payment notification', () => {
    const event = { id: 'EV-1', ...paid() };
    const { headers, body } = channel.notification(event);
    const notification = verifyChanANotification(cfg, headers, body);
    expect(notification).toMatchObject({ id: 'EV-1', eventType: 'TRANSACTION.SUCCESS', summary: '支付成功', resource: event.resource });
    expect(notification.resource).toMatchObject({ out_trade_no: 'ORDER-42', trade_state: 'SUCCESS', amount: { total: 1990, currency: 'CNY' } });
    expect(notification.createTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+08:00$/);
  });

  it('verifies a refund notification, with headers looked up whatever their case', () => {
    const resource = channel.refundResult({ outTradeNo: 'ORDER-42', outRefundNo: 'REFUND-1', status: 'SUCCESS', refund: 500, total: 1990 });
    const { headers, body } = channel.notification({ eventType: 'REFUND.SUCCESS', resource });
    const lowered: ChanAHeaders = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
    expect(verifyChanANotification(cfg, lowered, body).resource).toMatchObject({ out_refund_no: 'REFUND-1', refund_status: 'SUCCESS', amount: { refund: 500 } });
  });

  it('works with an empty associated_data', () => {
    const { headers, body } = channel.notification({ ...paid(), associatedData: '' });
    expect(JSON.parse(body.toString()).resource.associated_data).toBe('');
    expect(verifyChanANotification(cfg, headers, body).resource).toMatchObject({ out_trade_no: 'ORDER-42' });
  });

  it.each(['Wechatpay-Timestamp', 'Wechatpay-Nonce', 'Wechatpay-Signature', 'Wechatpay-Serial'])('refuses a notification without %s', (name) => {
    const { headers, body } = channel.notification(paid());
    expect(refusal(() => verifyChanANotification(cfg, { ...headers, [name]: undefined }, body))).toBe('missing_headers');
    expect(refusal(() => verifyChanANotification(cfg, { ...headers, [name]: '' }, body))).toBe('missing_headers');
  });

  it('refuses a repeated header (several values) as missing', () => {
    const { headers, body } = channel.notification(paid());
    const repeated = { ...headers, 'Wechatpay-Serial': [cfg.platformPublicKeyId, cfg.platformPublicKeyId] };
    expect(refusal(() => verifyChanANotification(cfg, repeated, body))).toBe('missing_headers');
  });

  it.each<[string, Parameters<ChanAServer['notification']>[1], ChanAVerificationReason]>([
    ['an unknown serial', { serial: 'PUB_KEY_ID_0114999999999999999999999999' }, 'unknown_serial'],
    ['a platform-certificate serial we do not hold', { serial: '5157F09EFDC096DE15EBE81A47057A7232F1B8E1' }, 'unknown_serial'],
    ['a flipped body bit', { flipBodyBit: true }, 'bad_signature'],
    ['a flipped signature bit', { flipSignatureBit: true }, 'bad_signature'],
    ['a flipped GCM tag bit', { flipTagBit: true }, 'decrypt_failed'],
    ['another associated_data declared', { associatedData: 'refund' }, 'decrypt_failed'],
    ['an unknown serial and a stale timestamp (serial is checked first)', { serial: 'PUB_KEY_ID_X', timestampOffsetSeconds: -3600 }, 'unknown_serial'],
  ])('refuses %s', (_, tamper, reason) => {
    const { headers, body } = channel.notification(paid(), tamper);
    expect(refusal(() => verifyChanANotification(cfg, headers, body))).toBe(reason);
  });

  it('refuses a SIGNTEST probe signature as bad_signature', () => {
    const { headers, body } = channel.notification(paid());
    expect(refusal(() => verifyChanANotification(cfg, { ...headers, 'Wechatpay-Signature': 'WECHATPAY/SIGNTEST/9U1Z6s3jFQ==' }, body))).toBe('bad_signature');
  });

  it('accepts a timestamp 299 s either side of now and refuses 300 s and 301 s', () => {
    expect(verifyAtDistance(299)).not.toThrow();
    expect(verifyAtDistance(-299)).not.toThrow();
    for (const offset of [300, -300, 301, -301]) expect(refusal(verifyAtDistance(offset))).toBe('timestamp_out_of_window');
  });

  it('refuses a timestamp that is not a number', () => {
    const { headers, body } = channel.notification(paid());
    expect(refusal(() => verifyChanANotification(cfg, { ...headers, 'Wechatpay-Timestamp': '1e9' }, body))).toBe('timestamp_out_of_window');
  });
});
