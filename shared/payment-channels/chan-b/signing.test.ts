import { generateKeyPairSync, sign, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { chanBSigningString, formParams, signRequest, verifyNotification } from './signing.js';

const app = generateKeyPairSync('rsa', { modulusLength: 2048 });
const channel = generateKeyPairSync('rsa', { modulusLength: 2048 });

const known = {
  timestamp: '2025-06-01 12:00:00', app_id: '2021000000000001', sign_type: 'RSA2', method: 'alipay.trade.page.pay', charset: 'utf-8',
  biz_content: '{"out_trade_no":"HWSP20250601040000123456","total_amount":"199.00"}', sign: 'ignored==', return_url: '', notify_url: 'https://shop.example/webhook/hardware-sales-chan-b?a=1&b=2',
};

describe('chan_b signing string', () => {
  it('is the sorted k=v pairs without sign and empty values, values as decoded (request: sign_type kept)', () => {
    expect(chanBSigningString(known, 'request')).toBe(
      'app_id=2021000000000001&biz_content={"out_trade_no":"HWSP20250601040000123456","total_amount":"199.00"}&charset=utf-8'
      + '&method=alipay.trade.page.pay&notify_url=https://shop.example/webhook/hardware-sales-chan-b?a=1&b=2'
      + '&sign_type=RSA2&timestamp=2025-06-01 12:00:00',
    );
  });

  it('drops sign_type too for a notification', () => {
    expect(chanBSigningString(known, 'notification')).not.toContain('sign_type');
    expect(chanBSigningString({ b: '2', a: '1', sign: 's', sign_type: 'RSA2', Z: 'upper first', c: '' }, 'notification')).toBe('Z=upper first&a=1&b=2');
  });
});

describe('signRequest / verifyNotification', () => {
  it('signs SHA256withRSA base64 over the request signing string (verified with the app public key)', () => {
    const signature = signRequest(app.privateKey, known);
    expect(verify('sha256', Buffer.from(chanBSigningString(known, 'request')), app.publicKey, Buffer.from(signature, 'base64'))).toBe(true);
  });

  const notification = () => {
    const params: Record<string, string> = { app_id: '2021000000000001', out_trade_no: 'HWSP20250601040000123456', total_amount: '199.00', trade_status: 'TRADE_SUCCESS', subject: '桌面机器人 Desk Robot', sign_type: 'RSA2' };
    params.sign = sign('sha256', Buffer.from(chanBSigningString(params, 'notification')), channel.privateKey).toString('base64');
    return params;
  };

  it('round trip: a notification signed with the channel key verifies, through a form body and back', () => {
    const params = notification();
    expect(verifyNotification(channel.publicKey, params)).toBe(true);
    expect(verifyNotification(channel.publicKey, formParams(new URLSearchParams(params).toString())!)).toBe(true);
  });

  it('refuses a changed value, a flipped signature bit, another key, a missing signature, another sign_type', () => {
    expect(verifyNotification(channel.publicKey, { ...notification(), total_amount: '1.00' })).toBe(false);
    const flipped = Buffer.from(notification().sign!, 'base64');
    flipped[10]! ^= 1;
    expect(verifyNotification(channel.publicKey, { ...notification(), sign: flipped.toString('base64') })).toBe(false);
    expect(verifyNotification(app.publicKey, notification())).toBe(false);
    expect(verifyNotification(channel.publicKey, { ...notification(), sign: '' })).toBe(false);
    expect(verifyNotification(channel.publicKey, { ...notification(), sign: 'not base64!' })).toBe(false);
    expect(verifyNotification(channel.publicKey, { ...notification(), sign_type: 'RSA' })).toBe(false);
    const withoutSign: Record<string, string> = { ...notification() };
    delete withoutSign.sign;
    expect(verifyNotification(channel.publicKey, withoutSign)).toBe(false);
  });
});

describe('formParams', () => {
  it('decodes a form body; a repeated key is refused; __proto__ is an ordinary key', () => {
    expect(formParams('a=1&b=x+y%26z&c=')).toEqual({ a: '1', b: 'x y&z', c: '' });
    expect(formParams('a=1&a=2')).toBeNull();
    const params = formParams('__proto__=x&a=1')!;
    expect(Object.keys(params)).toEqual(['__proto__', 'a']);
    expect(params.__proto__).toBe('x');
  });
});
