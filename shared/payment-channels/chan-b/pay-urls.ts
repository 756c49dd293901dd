import type { ChanBConfig } from './config.js';
import { signRequest } from './signing.js';

// The chan_b cashier URLs (protocols.md "chan_b"): a GET of the gateway with the common parameters,
// `biz_content` and our RSA2 `sign`. The buyer's browser opens it; nothing is sent from here.

export type ChanBPayScene = 'page' | 'wap';

export interface ChanBPayUrlInput {
  scene: ChanBPayScene;
  /** Our payment number (`HWSP…`): the channel's `out_trade_no`. */
  outTradeNo: string;
  /** Integer fen (CNY cents). */
  amountCents: number;
  subject: string;
  expiresAt: Date;
  notifyUrl: string;
  returnUrl?: string;
  /** The request's `timestamp`; default now. */
  now?: Date;
}

const methods = { page: 'alipay.trade.page.pay', wap: 'alipay.trade.wap.pay' } as const;
const productCodes = { page: 'FAST_INSTANT_TRADE_PAY', wap: 'QUICK_WAP_WAY' } as const;
/** Width in pixels of the embedded QR code (`qr_pay_mode` 4: an order code of a chosen width in an iframe). */
export const CHAN_B_QR_WIDTH = 200;
/** The channel's limit on `subject`. */
const SUBJECT_MAX = 256;

/** `yyyy-MM-dd HH:mm:ss` in Asia/Shanghai (UTC+8 all year: no daylight saving since 1991). */
export function shanghaiTime(at: Date): string {
  if (Number.isNaN(at.getTime())) throw new RangeError('invalid date');
  return new Date(at.getTime() + 8 * 3_600_000).toISOString().slice(0, 19).replace('T', ' ');
}

/** A `yyyy-MM-dd HH:mm:ss` Asia/Shanghai time as a Date; null when it is not one. */
export function parseShanghaiTime(text: string): Date | null {
  const match = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/.exec(text);
  if (!match) return null;
  const at = new Date(`${match[1]}-${match[2]}-${match[3]}T${match[4]}:${match[5]}:${match[6]}+08:00`);
  // Date would roll 2024-02-30 over to March: a time that does not exist is refused instead.
  return !Number.isNaN(at.getTime()) && shanghaiTime(at) === text ? at : null;
}

/** Integer cents as the channel's yuan string with two decimals (19900 → `199.00`), without floats. */
export function centsToYuan(cents: number): string {
  if (!Number.isSafeInteger(cents) || cents < 0) throw new RangeError(`amount must be a non-negative integer of cents, got ${cents}`);
  return `${Math.trunc(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;
}

/** The channel's yuan string as integer cents (`199.00`, `199.0`, `199` → 19900); null for anything else. */
export function yuanToCents(text: string): number | null {
  const match = /^(0|[1-9]\d{0,12})(?:\.(\d{1,2}))?$/.exec(text);
  if (!match) return null;
  return Number(match[1]) * 100 + Number((match[2] ?? '').padEnd(2, '0'));
}

/** The signed gateway URL of the cashier: `page` the embedded QR cashier, `wap` the cashier by redirect. */
export function chanBPayUrl(config: Pick<ChanBConfig, 'gatewayUrl' | 'appId' | 'appPrivateKey'>, input: ChanBPayUrlInput): string {
  const { scene } = input;
  const bizContent: Record<string, unknown> = {
    out_trade_no: input.outTradeNo,
    total_amount: centsToYuan(input.amountCents),
    subject: Array.from(input.subject).slice(0, SUBJECT_MAX).join(''),
    product_code: productCodes[scene],
    time_expire: shanghaiTime(input.expiresAt),
    ...(scene === 'page' ? { qr_pay_mode: '4', qrcode_width: CHAN_B_QR_WIDTH } : {}),
    // Where a buyer who leaves the mobile cashier half-way is sent back to.
    ...(scene === 'wap' && input.returnUrl ? { quit_url: input.returnUrl } : {}),
  };
  const params: Record<string, string> = {
    app_id: config.appId,
    method: methods[scene],
    format: 'JSON',
    charset: 'utf-8',
    sign_type: 'RSA2',
    timestamp: shanghaiTime(input.now ?? new Date()),
    version: '1.0',
    notify_url: input.notifyUrl,
    ...(input.returnUrl ? { return_url: input.returnUrl } : {}),
    biz_content: JSON.stringify(bizContent),
  };
  params.sign = signRequest(config.appPrivateKey, params);
  const query = new URLSearchParams(params).toString();
  return `${config.gatewayUrl}${config.gatewayUrl.includes('?') ? '&' : '?'}${query}`;
}
