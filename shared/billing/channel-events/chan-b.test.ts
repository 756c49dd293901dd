import { describe, expect, it } from 'vitest';
import { chanBKeys, chanBPaidParams } from '../../../test/harness/chan-b-keys.js';
import { loadConfig } from '../../config.js';
import { ChanBEventRefusedError, readChanBEvents } from './chan-b.js';
import { ChannelNotConfiguredError } from './reader.js';

const keys = chanBKeys();
const config = loadConfig(keys.env);
const orderNo = 'WFB20250601120000000002';
const read = (form: string) => readChanBEvents(config, { 'content-type': 'application/x-www-form-urlencoded' }, Buffer.from(form));
const paid = (overrides: Record<string, string> = {}) => chanBPaidParams(keys, { out_trade_no: orderNo, total_amount: '19.90', ...overrides });

describe('readChanBEvents', () => {
  it('reads TRADE_SUCCESS and TRADE_FINISHED as paid: yuan to fen, CNY, trade_no, notify_id', () => {
    for (const status of ['TRADE_SUCCESS', 'TRADE_FINISHED']) {
      const params = paid({ trade_status: status, notify_id: `n-${status}`, trade_no: '2025060122001400000001' });
      const [event, ...rest] = read(keys.notification(params));
      expect(rest).toEqual([]);
      expect(event).toMatchObject({
        provider: 'chan_b', eventId: `n-${status}`, providerOrderId: orderNo, kind: 'paid', amount: 1990, currency: 'CNY',
        channelReference: '2025060122001400000001',
      });
      expect(event!.payload).toMatchObject(params);
    }
  });

  it('reads a refund notification (refund_fee, with either trade status) as refunded by refund_fee', () => {
    for (const [status, fee, cents] of [['TRADE_SUCCESS', '3.00', 300], ['TRADE_CLOSED', '19.90', 1990]] as const) {
      const form = keys.notification(paid({ trade_status: status, refund_fee: fee, gmt_refund: '2025-06-02 10:00:00.123', out_biz_no: 'RF1' }));
      expect(read(form)).toEqual([expect.objectContaining({ kind: 'refunded', amount: cents, currency: 'CNY', providerOrderId: orderNo, channelReference: 'RF1' })]);
    }
  });

  it('marks a trade closed unpaid as failed and has no event while the buyer has not paid', () => {
    expect(read(keys.notification(paid({ trade_status: 'TRADE_CLOSED' })))).toEqual([expect.objectContaining({ kind: 'failed', amount: null })]);
    expect(read(keys.notification(paid({ trade_status: 'WAIT_BUYER_PAY' })))).toEqual([]);
  });

  it('refuses anything not genuine or not ours', () => {
    const params = paid();
    const forged = [
      keys.notification(params, { flipSignatureBit: true }),
      keys.notification(params, { unsigned: true }),
      keys.notification(params, { changeAfterSigning: { total_amount: '19.91' } }),
      keys.notification(params, { changeAfterSigning: { sign_type: 'RSA' } }),
      `${keys.notification(params)}&out_trade_no=${orderNo}`,
      keys.notification({ ...params, app_id: '2021000000000999' }),
      keys.notification({ ...params, notify_id: '' }),
      keys.notification({ ...params, total_amount: '19.9O' }),
      chanBKeys(keys.appId).notification(params),
    ];
    for (const form of forged) expect(() => read(form), form).toThrow(ChanBEventRefusedError);
  });

  it('is not configured without the CHAN_B_* variables', () => {
    expect(() => readChanBEvents(loadConfig({}), {}, Buffer.from(keys.notification(paid())))).toThrow(ChannelNotConfiguredError);
  });
});
