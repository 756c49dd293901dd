import { chanBConfigOf } from '../../payment-channels/chan-b/config.js';
import { yuanToCents } from '../../payment-channels/chan-b/pay-urls.js';
import { formParams, verifyNotification } from '../../payment-channels/chan-b/signing.js';
import { ChannelNotConfiguredError, type ChannelEventReader } from './reader.js';

// chan_b (Alipay open platform) notifications of general payments: a form body verified with RSA2
// over its sorted parameters (without sign / sign_type) and CHAN_B_PUBLIC_KEY, for our app id only,
// read into PaymentEvents. chan_b amounts are CNY yuan with two decimals.

/** A notification that is not genuine, not for our app, or not readable. */
export class ChanBEventRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ChanBEventRefusedError';
  }
}

const paidStatuses = new Set(['TRADE_SUCCESS', 'TRADE_FINISHED']);

export const readChanBEvents: ChannelEventReader = (config, _headers, rawBody) => {
  const cfg = chanBConfigOf(config);
  if (!cfg) throw new ChannelNotConfiguredError('chan_b');
  const params = formParams(rawBody.toString('utf8'));
  if (!params) throw new ChanBEventRefusedError('a repeated parameter');
  if (!verifyNotification(cfg.channelPublicKey, params)) throw new ChanBEventRefusedError('bad or missing signature');
  if (params.app_id !== cfg.appId) throw new ChanBEventRefusedError('another app id');

  const providerOrderId = params.out_trade_no;
  const eventId = params.notify_id;
  if (!providerOrderId || !eventId) throw new ChanBEventRefusedError('out_trade_no and notify_id are required');
  const base = { provider: 'chan_b' as const, eventId, providerOrderId, currency: 'CNY', payload: { ...params } };

  // A refund is notified with the trade's status (TRADE_SUCCESS after a partial one, TRADE_CLOSED
  // after a full one) and `refund_fee`: the trade's TOTAL refunded so far, not this refund's.
  if (params.refund_fee) {
    return [{ ...base, kind: 'refunded', amount: centsOf(params, 'refund_fee'), refundedTotal: true, channelReference: params.out_biz_no || null }];
  }
  const status = params.trade_status ?? '';
  if (paidStatuses.has(status)) {
    return [{ ...base, kind: 'paid', amount: centsOf(params, 'total_amount'), channelReference: params.trade_no || null }];
  }
  // Closed unpaid (the trade expired or was cancelled): it can no longer be paid.
  if (status === 'TRADE_CLOSED') return [{ ...base, kind: 'failed', amount: null, channelReference: params.trade_no || null }];
  // WAIT_BUYER_PAY and anything else: nothing happened yet.
  return [];
};

function centsOf(params: Record<string, string>, name: 'total_amount' | 'refund_fee'): number {
  const cents = yuanToCents(params[name] ?? '');
  if (cents === null) throw new ChanBEventRefusedError(`malformed ${name}`);
  return cents;
}
