import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChanAServer, type ChanAServer } from '../../../test/harness/chan-a-server.js';
import { loadConfig, type Config } from '../../config.js';
import { ChanAVerificationError } from '../../payment-channels/chan-a/notifications.js';
import { ChanAEventRefusedError, readChanAEvents } from './chan-a.js';
import { ChannelNotConfiguredError } from './reader.js';

const orderNo = 'WFB20250601120000000001';

describe('readChanAEvents', () => {
  let server: ChanAServer;
  let config: Config;
  beforeAll(async () => {
    server = await startChanAServer();
    config = loadConfig(server.env);
  });
  afterAll(() => server.close());

  const read = (...args: Parameters<ChanAServer['notification']>) => {
    const { headers, body } = server.notification(...args);
    return readChanAEvents(config, headers, body);
  };

  it('reads TRANSACTION.SUCCESS as paid: order number, fen, currency, transaction id, the notification id', () => {
    const resource = server.paidTransaction({ outTradeNo: orderNo, total: 1990, transactionId: '4200000000000000000000000001' });
    const [event, ...rest] = read({ id: 'evt-paid-1', eventType: 'TRANSACTION.SUCCESS', resource });
    expect(rest).toEqual([]);
    expect(event).toMatchObject({
      provider: 'chan_a', eventId: 'evt-paid-1', providerOrderId: orderNo, kind: 'paid', amount: 1990, currency: 'CNY',
      channelReference: '4200000000000000000000000001',
    });
    expect(event!.payload).toMatchObject({ id: 'evt-paid-1', event_type: 'TRANSACTION.SUCCESS', resource });
  });

  it('reads REFUND.SUCCESS as refunded with this refund\'s amount (not the trade total)', () => {
    const resource = server.refundResult({ outTradeNo: orderNo, outRefundNo: 'R1', status: 'SUCCESS', refund: 300, total: 1990 });
    expect(read({ id: 'evt-refund-1', eventType: 'REFUND.SUCCESS', resource })).toEqual([expect.objectContaining({
      provider: 'chan_a', eventId: 'evt-refund-1', providerOrderId: orderNo, kind: 'refunded', amount: 300, currency: 'CNY',
    })]);
  });

  it('has no event for refunds that did not happen, other events, or a transaction that is not SUCCESS', () => {
    for (const status of ['ABNORMAL', 'CLOSED'] as const) {
      const resource = server.refundResult({ outTradeNo: orderNo, outRefundNo: 'R2', status, refund: 300, total: 1990 });
      expect(read({ eventType: `REFUND.${status}`, resource })).toEqual([]);
    }
    const notPaid = { ...server.paidTransaction({ outTradeNo: orderNo, total: 1990 }), trade_state: 'NOTPAY' };
    expect(read({ eventType: 'TRANSACTION.SUCCESS', resource: notPaid })).toEqual([]);
    expect(read({ eventType: 'TRANSACTION.CLOSED', resource: server.paidTransaction({ outTradeNo: orderNo, total: 1990 }) })).toEqual([]);
  });

  it('keeps a malformed amount as null (the apply step refuses it) but refuses a resource without an order number', () => {
    const resource = { ...server.paidTransaction({ outTradeNo: orderNo, total: 1990 }), amount: { total: '19.90', currency: 7 } };
    expect(read({ eventType: 'TRANSACTION.SUCCESS', resource })).toEqual([expect.objectContaining({ amount: null, currency: null })]);
    const { out_trade_no: _omitted, ...noOrder } = server.paidTransaction({ outTradeNo: orderNo, total: 1990 });
    expect(() => read({ eventType: 'TRANSACTION.SUCCESS', resource: noOrder })).toThrow(ChanAEventRefusedError);
  });

  it('refuses another merchant or app, in a payment and in a refund', () => {
    const paid = server.paidTransaction({ outTradeNo: orderNo, total: 1990 });
    expect(() => read({ eventType: 'TRANSACTION.SUCCESS', resource: { ...paid, mchid: '1900000000' } })).toThrow(/mchid/);
    expect(() => read({ eventType: 'TRANSACTION.SUCCESS', resource: { ...paid, appid: 'wx0000000000000000' } })).toThrow(/appid/);
    const { appid: _omitted, ...noApp } = paid;
    expect(() => read({ eventType: 'TRANSACTION.SUCCESS', resource: noApp })).toThrow(/appid/);
    const refund = server.refundResult({ outTradeNo: orderNo, outRefundNo: 'R3', status: 'SUCCESS', refund: 1, total: 1990 });
    expect(() => read({ eventType: 'REFUND.SUCCESS', resource: { ...refund, mchid: '1900000000' } })).toThrow(ChanAEventRefusedError);
    expect(() => read({ eventType: 'REFUND.SUCCESS', resource: { ...refund, refund_status: 'CLOSED' } })).toThrow(ChanAEventRefusedError);
  });

  it('passes every verification failure through as ChanAVerificationError', () => {
    const resource = server.paidTransaction({ outTradeNo: orderNo, total: 1990 });
    const event = { eventType: 'TRANSACTION.SUCCESS', resource };
    const reasons = [
      { flipBodyBit: true }, { flipSignatureBit: true }, { flipTagBit: true }, { serial: 'PUB_KEY_ID_0114000000000000000000000000' },
      { timestampOffsetSeconds: -300 },
    ].map((tamper) => {
      try {
        read(event, tamper);
      } catch (error) {
        expect(error).toBeInstanceOf(ChanAVerificationError);
        return (error as ChanAVerificationError).reason;
      }
      return 'accepted';
    });
    expect(reasons).toEqual(['bad_signature', 'bad_signature', 'decrypt_failed', 'unknown_serial', 'timestamp_out_of_window']);
    const { headers, body } = server.notification(event);
    const { 'Wechatpay-Signature': _omitted, ...unsigned } = headers;
    expect(() => readChanAEvents(config, unsigned, body)).toThrow(ChanAVerificationError);
  });

  it('is not configured without the CHAN_A_* variables', () => {
    const { headers, body } = server.notification({ eventType: 'TRANSACTION.SUCCESS', resource: {} });
    expect(() => readChanAEvents(loadConfig({}), headers, body)).toThrow(ChannelNotConfiguredError);
  });
});
