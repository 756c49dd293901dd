import { generateKeyPairSync, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { centsToYuan, chanBPayUrl, parseShanghaiTime, shanghaiTime, yuanToCents } from './pay-urls.js';
import { chanBSigningString } from './signing.js';

const app = generateKeyPairSync('rsa', { modulusLength: 2048 });
const config = { gatewayUrl: 'https://openapi.alipay.com/gateway.do', appId: '2021000000000001', appPrivateKey: app.privateKey };

describe('amounts and times', () => {
  it('cents to yuan with two decimals, without floats', () => {
    expect([0, 1, 10, 99, 100, 19_900, 19_999, 123_456_789].map(centsToYuan)).toEqual(['0.00', '0.01', '0.10', '0.99', '1.00', '199.00', '199.99', '1234567.89']);
    for (const bad of [-1, 1.5, Number.NaN, 2 ** 60]) expect(() => centsToYuan(bad)).toThrow(RangeError);
  });

  it('yuan to cents: two, one or no decimals; anything else is null', () => {
    expect(['199.00', '199.0', '199', '0.01', '198.99', '0.1'].map(yuanToCents)).toEqual([19_900, 19_900, 19_900, 1, 19_899, 10]);
    for (const bad of ['', '199.', '.99', '199.001', '-1.00', '+1.00', '1e2', '01.00', ' 199.00', '199,00', '0x10', 'NaN', '１９９']) {
      expect({ bad, cents: yuanToCents(bad) }).toEqual({ bad, cents: null });
    }
  });

  it('Asia/Shanghai times both ways', () => {
    expect(shanghaiTime(new Date('2025-06-01T16:30:05.999Z'))).toBe('2025-06-02 00:30:05');
    expect(parseShanghaiTime('2025-06-02 00:30:05')?.toISOString()).toBe('2025-06-01T16:30:05.000Z');
    for (const bad of ['2025-02-30 10:00:00', '2025-06-02T00:30:05', '2025-06-02 24:00:00', '']) expect(parseShanghaiTime(bad)).toBeNull();
  });
});

describe('chanBPayUrl', () => {
  const input = {
    outTradeNo: 'HWSP20250601040000123456', amountCents: 19_900, subject: 'Desk Robot',
    expiresAt: new Date('2025-06-01T04:30:00Z'), notifyUrl: 'https://shop.example/webhook/hardware-sales-chan-b', now: new Date('2025-06-01T04:00:00Z'),
  };
  const parse = (url: string) => {
    const parsed = new URL(url);
    return { origin: parsed.origin + parsed.pathname, params: Object.fromEntries(parsed.searchParams) };
  };
  const signatureVerifies = (params: Record<string, string>) =>
    verify('sha256', Buffer.from(chanBSigningString(params, 'request')), app.publicKey, Buffer.from(params.sign!, 'base64'));

  it('page: alipay.trade.page.pay, the embedded QR cashier, signed over the common params and biz_content', () => {
    const { origin, params } = parse(chanBPayUrl(config, { ...input, scene: 'page', returnUrl: 'https://shop.example/orders/x' }));
    expect(origin).toBe('https://openapi.alipay.com/gateway.do');
    expect(params).toMatchObject({
      app_id: '2021000000000001', method: 'alipay.trade.page.pay', format: 'JSON', charset: 'utf-8', sign_type: 'RSA2',
      timestamp: '2025-06-01 12:00:00', version: '1.0', notify_url: input.notifyUrl, return_url: 'https://shop.example/orders/x',
    });
    expect(JSON.parse(params.biz_content!)).toEqual({
      out_trade_no: input.outTradeNo, total_amount: '199.00', subject: 'Desk Robot', product_code: 'FAST_INSTANT_TRADE_PAY',
      time_expire: '2025-06-01 12:30:00', qr_pay_mode: '4', qrcode_width: 200,
    });
    expect(signatureVerifies(params)).toBe(true);
    expect(signatureVerifies({ ...params, biz_content: params.biz_content!.replace('199.00', '1.00') })).toBe(false);
  });

  it('wap: alipay.trade.wap.pay with QUICK_WAP_WAY; no return_url when none is given', () => {
    const { params } = parse(chanBPayUrl(config, { ...input, scene: 'wap' }));
    expect(params.method).toBe('alipay.trade.wap.pay');
    expect(params).not.toHaveProperty('return_url');
    expect(JSON.parse(params.biz_content!)).toEqual({
      out_trade_no: input.outTradeNo, total_amount: '199.00', subject: 'Desk Robot', product_code: 'QUICK_WAP_WAY', time_expire: '2025-06-01 12:30:00',
    });
    expect(signatureVerifies(params)).toBe(true);
  });

  it('encodes every value (a subject with & = + and CJK survives the URL)', () => {
    const subject = '桌面机器人 & co = 1+1';
    const { params } = parse(chanBPayUrl(config, { ...input, scene: 'wap', subject }));
    expect(JSON.parse(params.biz_content!).subject).toBe(subject);
    expect(signatureVerifies(params)).toBe(true);
  });
});
