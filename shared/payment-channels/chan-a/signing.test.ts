import { generateKeyPairSync, sign, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { authorizationHeader, jsapiPayParams, verifyChanASignature } from './signing.js';

const merchant = generateKeyPairSync('rsa', { modulusLength: 2048 });
const cfg = { mchId: '1900000109', appId: 'wxd678efh567hg6787', merchantSerial: '408B07E79B8269FEC3D5D3E6AB8ED163A6A380DB', merchantPrivateKey: merchant.privateKey };

/** Splits `WECHATPAY2-SHA256-RSA2048 k="v",…` into its parameters. */
function parseAuthorization(header: string): Record<string, string> {
  const [scheme, rest = ''] = header.split(/ (.*)/s);
  expect(scheme).toBe('WECHATPAY2-SHA256-RSA2048');
  const params: Record<string, string> = {};
  for (const part of rest.split(',')) {
    const match = /^(\w+)="([^"]*)"$/.exec(part);
    expect(match, part).not.toBeNull();
    params[match![1]!] = match![2]!;
  }
  return params;
}

const verifiesWithMerchantKey = (message: string, signatureB64: string) =>
  verify('sha256', Buffer.from(message, 'utf8'), merchant.publicKey, Buffer.from(signatureB64, 'base64'));

describe('authorizationHeader', () => {
  it('signs METHOD, path with query, timestamp, nonce and body, each line ending in \\n, with the merchant key', () => {
    const body = '{"out_trade_no":"ORDER-1","amount":{"total":1}}';
    const header = authorizationHeader(cfg, 'post', '/v3/refund/domestic/refunds', body, { timestamp: 1554208460, nonce: '593BEC0C930BF1AFEB40B4A08C8FB242' });
    const params = parseAuthorization(header);
    expect(Object.keys(params)).toEqual(['mchid', 'nonce_str', 'signature', 'timestamp', 'serial_no']);
    expect(params).toMatchObject({ mchid: cfg.mchId, nonce_str: '593BEC0C930BF1AFEB40B4A08C8FB242', timestamp: '1554208460', serial_no: cfg.merchantSerial });
    const message = `POST\n/v3/refund/domestic/refunds\n1554208460\n593BEC0C930BF1AFEB40B4A08C8FB242\n${body}\n`;
    expect(verifiesWithMerchantKey(message, params.signature!)).toBe(true);
    // Any other path or body does not verify: the signature binds the exact request.
    expect(verifiesWithMerchantKey(message.replace('refunds', 'refund'), params.signature!)).toBe(false);
    expect(verifiesWithMerchantKey(message.replace('"total":1', '"total":2'), params.signature!)).toBe(false);
  });

  it('signs a GET with its query string and an empty body line', () => {
    const path = '/v3/pay/transactions/out-trade-no/ORDER-1?mchid=1900000109';
    const params = parseAuthorization(authorizationHeader(cfg, 'GET', path, '', { timestamp: 1700000000, nonce: 'N1' }));
    expect(verifiesWithMerchantKey(`GET\n${path}\n1700000000\nN1\n\n`, params.signature!)).toBe(true);
  });

  it('defaults to the current time and a fresh 32-character nonce', () => {
    const before = Math.floor(Date.now() / 1000);
    const first = parseAuthorization(authorizationHeader(cfg, 'GET', '/v3/x', ''));
    const second = parseAuthorization(authorizationHeader(cfg, 'GET', '/v3/x', ''));
    expect(Number(first.timestamp)).toBeGreaterThanOrEqual(before);
    expect(Number(first.timestamp)).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
    expect(first.nonce_str).toMatch(/^[0-9A-F]{32}$/);
    expect(second.nonce_str).not.toBe(first.nonce_str);
  });
});

describe('jsapiPayParams', () => {
  it('returns the bridge parameters, paySign over appId, timeStamp, nonceStr and package on four lines', () => {
    const params = jsapiPayParams(cfg, 'wx201410272009395522657a690389285100', { timestamp: 1414561699, nonce: '5K8264ILTKCH16CQ2502SI8ZNMTM67VS' });
    expect(params).toEqual({
      appId: cfg.appId,
      timeStamp: '1414561699',
      nonceStr: '5K8264ILTKCH16CQ2502SI8ZNMTM67VS',
      package: 'prepay_id=wx201410272009395522657a690389285100',
      signType: 'RSA',
      paySign: expect.any(String),
    });
    const message = `${cfg.appId}\n1414561699\n5K8264ILTKCH16CQ2502SI8ZNMTM67VS\nprepay_id=wx201410272009395522657a690389285100\n`;
    expect(verifiesWithMerchantKey(message, params.paySign)).toBe(true);
    expect(verifiesWithMerchantKey(message.slice(0, -1), params.paySign)).toBe(false);
  });

  it('gives timeStamp as a string of seconds by default', () => {
    const params = jsapiPayParams(cfg, 'wx1');
    expect(params.timeStamp).toMatch(/^\d{10}$/);
    expect(Math.abs(Number(params.timeStamp) - Date.now() / 1000)).toBeLessThan(5);
  });
});

describe('verifyChanASignature', () => {
  const platform = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const body = '{"id":"EV-2018022511223320873","event_type":"TRANSACTION.SUCCESS"}';
  const signature = sign('sha256', Buffer.from(`1622540800\nnonce-1\n${body}\n`), platform.privateKey).toString('base64');

  it('accepts the channel signature over timestamp, nonce and body, for a string or the raw bytes', () => {
    expect(verifyChanASignature(platform.publicKey, '1622540800', 'nonce-1', body, signature)).toBe(true);
    expect(verifyChanASignature(platform.publicKey, '1622540800', 'nonce-1', Buffer.from(body), signature)).toBe(true);
  });

  it('refuses another body, timestamp, nonce or key, and garbage such as a SIGNTEST probe, without throwing', () => {
    expect(verifyChanASignature(platform.publicKey, '1622540800', 'nonce-1', `${body} `, signature)).toBe(false);
    expect(verifyChanASignature(platform.publicKey, '1622540801', 'nonce-1', body, signature)).toBe(false);
    expect(verifyChanASignature(platform.publicKey, '1622540800', 'nonce-2', body, signature)).toBe(false);
    expect(verifyChanASignature(merchant.publicKey, '1622540800', 'nonce-1', body, signature)).toBe(false);
    expect(verifyChanASignature(platform.publicKey, '1622540800', 'nonce-1', body, 'WECHATPAY/SIGNTEST/ZmFrZQ==')).toBe(false);
    expect(verifyChanASignature(platform.publicKey, '1622540800', 'nonce-1', body, '')).toBe(false);
  });
});
