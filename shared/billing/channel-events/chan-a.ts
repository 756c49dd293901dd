import { chanAConfigOf } from '../../payment-channels/chan-a/config.js';
import { verifyChanANotification, type ChanANotification } from '../../payment-channels/chan-a/notifications.js';
import type { PaymentEvent } from '../payment-events.js';
import { ChannelNotConfiguredError, type ChannelEventReader } from './reader.js';

// chan_a (WeChat Pay API v3) callbacks of general payments: the hardware callbacks' verifier
// (signature, serial, ±300 s, AES-256-GCM resource), then the decrypted resource as PaymentEvents.
// Only `TRANSACTION.SUCCESS` and `REFUND.SUCCESS` move an order; every other event is genuine but
// says nothing to apply (acknowledged, so the channel stops retrying it).

/** A verified notification whose content is not for us (another merchant) or not readable. */
export class ChanAEventRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ChanAEventRefusedError';
  }
}

export const readChanAEvents: ChannelEventReader = (config, headers, rawBody, nowMs) => {
  const cfg = chanAConfigOf(config);
  if (!cfg) throw new ChannelNotConfiguredError('chan_a');
  const notification = verifyChanANotification(cfg, headers, rawBody, nowMs);
  const { resource } = notification;

  // A refund resource carries no appid; a transaction always carries both.
  if (resource.mchid !== cfg.mchId) throw new ChanAEventRefusedError('another merchant (mchid)');
  const isRefund = notification.eventType.startsWith('REFUND.');
  if (isRefund ? resource.appid !== undefined && resource.appid !== cfg.appId : resource.appid !== cfg.appId) {
    throw new ChanAEventRefusedError('another app (appid)');
  }

  if (notification.eventType === 'TRANSACTION.SUCCESS') return paidEvents(notification);
  if (notification.eventType === 'REFUND.SUCCESS') return refundEvents(notification);
  // REFUND.ABNORMAL / REFUND.CLOSED: the money did not go back, nothing to reverse.
  return [];
};

function paidEvents(notification: ChanANotification): PaymentEvent[] {
  // The channel notifies successes only; another state under this event is not a payment.
  if (notification.resource.trade_state !== 'SUCCESS') return [];
  return [eventOf(notification, 'paid', 'total', 'transaction_id')];
}

function refundEvents(notification: ChanANotification): PaymentEvent[] {
  const status = notification.resource.refund_status;
  if (status !== undefined && status !== 'SUCCESS') throw new ChanAEventRefusedError(`refund_status ${String(status)} under REFUND.SUCCESS`);
  // `amount.refund` is this refund's amount (`amount.total` is the whole trade's).
  return [eventOf(notification, 'refunded', 'refund', 'refund_id')];
}

function eventOf(notification: ChanANotification, kind: 'paid' | 'refunded', amountField: 'total' | 'refund', referenceField: string): PaymentEvent {
  const { resource } = notification;
  const amount = typeof resource.amount === 'object' && resource.amount !== null ? resource.amount as Record<string, unknown> : {};
  return {
    provider: 'chan_a',
    eventId: notification.id,
    providerOrderId: outTradeNoOf(resource),
    kind,
    amount: Number.isSafeInteger(amount[amountField]) ? amount[amountField] as number : null,
    currency: stringOrNull(amount.currency),
    channelReference: stringOrNull(resource[referenceField]),
    // What is recorded: the decrypted notification (no keys, no signature).
    payload: { id: notification.id, event_type: notification.eventType, create_time: notification.createTime, resource },
  };
}

function outTradeNoOf(resource: Record<string, unknown>): string {
  const no = resource.out_trade_no;
  if (typeof no !== 'string' || no === '') throw new ChanAEventRefusedError('no out_trade_no');
  return no;
}

const stringOrNull = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null);
