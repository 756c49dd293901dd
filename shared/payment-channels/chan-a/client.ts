import type { ChanAConfig } from './config.js';
import { ChanAVerificationError, verifyChanASignedMessage, type ChanAVerificationReason } from './notifications.js';
import { authorizationHeader } from './signing.js';

/** A trade as the query endpoint reports it. */
export interface ChanATrade {
  /** `SUCCESS`, `NOTPAY`, `CLOSED`, `REFUND`, `USERPAYING`, `PAYERROR`, … as the channel says. */
  tradeState: string;
  transactionId?: string;
  /** Minor units (fen). */
  amount?: { total: number; currency: string };
  successTime?: string;
  outTradeNo: string;
}

export interface ChanARefundRequest {
  outTradeNo: string;
  outRefundNo: string;
  reason?: string;
  refundCents: number;
  totalCents: number;
  notifyUrl?: string;
}

export interface ChanAOrderRequest {
  description: string;
  outTradeNo: string;
  amountCents: number;
  notifyUrl: string;
  timeExpire?: Date;
}

export interface ChanAClient {
  /** null when the channel does not know the order (404 ORDER_NOT_EXIST): it was never created there. */
  queryByOutTradeNo(outTradeNo: string): Promise<ChanATrade | null>;
  /** Idempotent on `outRefundNo`: asking again returns the same refund. */
  createRefund(request: ChanARefundRequest): Promise<{ refundId: string; status: string }>;
  createNativeOrder(request: ChanAOrderRequest): Promise<{ codeUrl: string }>;
  createJsapiOrder(request: ChanAOrderRequest & { payerOpenId: string }): Promise<{ prepayId: string }>;
}

export interface ChanAClientOptions {
  /** E.g. the service's SSRF-safe client; default global fetch. */
  fetch?: typeof fetch;
  /** Per request, covering the body; default 10 s. */
  timeoutMs?: number;
}

/**
 * The channel answered with an error, or could not be reached. `status` is null when no HTTP answer
 * came (network error, timeout). `retryable`: 5xx, 429 and network errors are worth another try
 * (the channel's creates and refunds are idempotent on our out_* numbers); other 4xx are not.
 */
export class ChanAApiError extends Error {
  readonly retryable: boolean;
  constructor(readonly status: number | null, readonly code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ChanAApiError';
    this.retryable = status === null || status === 429 || status >= 500;
  }
}

/**
 * A 2xx answer that cannot be trusted: unsigned, badly signed, stale, or not the expected shape.
 * Not retryable: it means a wrong key, something in the middle, or a protocol change, all of
 * which need a person.
 */
export class ChanAResponseError extends Error {
  readonly retryable = false;
  constructor(readonly reason: ChanAVerificationReason, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ChanAResponseError';
  }
}

const DEFAULT_TIMEOUT_MS = 10_000;
/** The channel's own rule for out_trade_no; checked before it goes into a URL path. */
const OUT_TRADE_NO = /^[0-9A-Za-z_\-|*]{6,32}$/;

type Json = Record<string, unknown>;

export function createChanAClient(cfg: ChanAConfig, options: ChanAClientOptions = {}): ChanAClient {
  const fetchImpl = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;

  async function call(method: 'GET' | 'POST', path: string, payload?: Json): Promise<Json> {
    const url = new URL(`${cfg.apiBaseUrl}${path}`);
    const body = payload === undefined ? '' : JSON.stringify(payload);
    // Signed over the path exactly as it goes on the wire (URL may normalise what we built).
    const headers: Record<string, string> = {
      Authorization: authorizationHeader(cfg, method, url.pathname + url.search, body),
      Accept: 'application/json',
      // The channel's documentation requires a User-Agent naming the client.
      'User-Agent': 'workflow-app-service chan-a-client',
    };
    if (body) headers['Content-Type'] = 'application/json';

    let status: number;
    let raw: Buffer;
    let responseHeaders: Record<string, string>;
    try {
      const response = await fetchImpl(url.href, { method, headers, body: body || undefined, signal: AbortSignal.timeout(timeoutMs) });
      status = response.status;
      responseHeaders = Object.fromEntries(response.headers);
      raw = Buffer.from(await response.arrayBuffer());
    } catch (error) {
      const timedOut = error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
      // fetch says only "fetch failed": the socket errno (ECONNREFUSED, …) is in its cause.
      const detail = timedOut ? `no answer within ${timeoutMs} ms` : describeNetworkError(error);
      throw new ChanAApiError(null, timedOut ? 'TIMEOUT' : 'NETWORK_ERROR', `${method} ${url.pathname}: ${detail}`, { cause: error });
    }

    // Like the reference SDKs, error answers are read unverified: they never make us believe that
    // money moved, only that this call did not succeed.
    if (status < 200 || status > 299) throw apiError(status, raw);
    try {
      verifyChanASignedMessage(cfg, responseHeaders, raw);
    } catch (error) {
      if (error instanceof ChanAVerificationError) throw new ChanAResponseError(error.reason, `${method} ${url.pathname}: ${error.message}`, { cause: error });
      throw error;
    }
    return parseJsonObject(raw);
  }

  return {
    async queryByOutTradeNo(outTradeNo) {
      if (!OUT_TRADE_NO.test(outTradeNo)) {
        // Refused locally, as the channel would (400 PARAM_ERROR): it must not shape the URL path.
        throw new ChanAApiError(400, 'PARAM_ERROR', 'out_trade_no must be 6-32 characters of [0-9A-Za-z_-|*]');
      }
      let body: Json;
      try {
        body = await call('GET', `/v3/pay/transactions/out-trade-no/${encodeURIComponent(outTradeNo)}?mchid=${encodeURIComponent(cfg.mchId)}`);
      } catch (error) {
        if (error instanceof ChanAApiError && error.status === 404 && error.code === 'ORDER_NOT_EXIST') return null;
        throw error;
      }
      return tradeFrom(body, outTradeNo, cfg.mchId);
    },

    async createRefund(request) {
      const body = await call('POST', '/v3/refund/domestic/refunds', {
        out_trade_no: request.outTradeNo,
        out_refund_no: request.outRefundNo,
        reason: request.reason,
        notify_url: request.notifyUrl,
        amount: { refund: request.refundCents, total: request.totalCents, currency: 'CNY' },
      });
      if (typeof body.refund_id !== 'string' || typeof body.status !== 'string'
        || (body.out_refund_no !== undefined && body.out_refund_no !== request.outRefundNo)) {
        throw new ChanAResponseError('bad_body', 'refund answer without refund_id/status, or for another out_refund_no');
      }
      return { refundId: body.refund_id, status: body.status };
    },

    async createNativeOrder(request) {
      const body = await call('POST', '/v3/pay/transactions/native', orderBody(cfg, request));
      if (typeof body.code_url !== 'string') throw new ChanAResponseError('bad_body', 'native order answer without code_url');
      return { codeUrl: body.code_url };
    },

    async createJsapiOrder(request) {
      const body = await call('POST', '/v3/pay/transactions/jsapi', {
        ...orderBody(cfg, request),
        payer: { openid: request.payerOpenId },
      });
      if (typeof body.prepay_id !== 'string') throw new ChanAResponseError('bad_body', 'JSAPI order answer without prepay_id');
      return { prepayId: body.prepay_id };
    },
  };
}

function orderBody(cfg: ChanAConfig, request: ChanAOrderRequest): Json {
  return {
    appid: cfg.appId,
    mchid: cfg.mchId,
    description: request.description,
    out_trade_no: request.outTradeNo,
    time_expire: request.timeExpire ? chinaRfc3339(request.timeExpire) : undefined,
    notify_url: request.notifyUrl,
    amount: { total: request.amountCents, currency: 'CNY' },
  };
}

function tradeFrom(body: Json, outTradeNo: string, mchId: string): ChanATrade {
  // A trade for another order or merchant would be a channel bug or a replayed answer: never trust it.
  if (typeof body.trade_state !== 'string' || body.out_trade_no !== outTradeNo || (body.mchid !== undefined && body.mchid !== mchId)) {
    throw new ChanAResponseError('bad_body', 'query answer without trade_state, or for another order or merchant');
  }
  const amount = body.amount;
  const total = isJson(amount) && typeof amount.total === 'number' ? amount.total : undefined;
  return {
    tradeState: body.trade_state,
    outTradeNo,
    ...(typeof body.transaction_id === 'string' ? { transactionId: body.transaction_id } : {}),
    ...(total !== undefined && isJson(amount) ? { amount: { total, currency: typeof amount.currency === 'string' ? amount.currency : 'CNY' } } : {}),
    ...(typeof body.success_time === 'string' ? { successTime: body.success_time } : {}),
  };
}

function apiError(status: number, raw: Buffer): ChanAApiError {
  const text = raw.toString('utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const code = isJson(parsed) && typeof parsed.code === 'string' ? parsed.code : `HTTP_${status}`;
  const message = isJson(parsed) && typeof parsed.message === 'string' ? parsed.message : text.slice(0, 200);
  return new ChanAApiError(status, code, message);
}

function describeNetworkError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { cause?: { code?: unknown } } | null)?.cause?.code;
  return typeof code === 'string' ? `${message} (${code})` : message;
}

function parseJsonObject(raw: Buffer): Json {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new ChanAResponseError('bad_body', 'signed answer is not JSON');
  }
  if (!isJson(parsed)) throw new ChanAResponseError('bad_body', 'signed answer is not a JSON object');
  return parsed;
}

/** RFC 3339 in China time, seconds precision (`2024-01-02T15:04:05+08:00`), the form the channel documents. */
export function chinaRfc3339(date: Date): string {
  const shifted = new Date(date.getTime() + 8 * 3600_000);
  return `${shifted.toISOString().slice(0, 19)}+08:00`;
}

const isJson = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
