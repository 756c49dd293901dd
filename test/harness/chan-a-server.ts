import { generateKeyPairSync, randomBytes, randomInt, randomUUID, sign, verify } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { encryptChanAResource } from '../../shared/payment-channels/chan-a/notifications.js';

/**
 * A local chan_a (WeChat Pay API v3) on 127.0.0.1, with its own freshly generated keys: it holds the
 * merchant PUBLIC key (to check our Authorization headers) and the platform PRIVATE key (to sign its
 * answers and notifications), the way the real channel does. `env` configures the service for it.
 *
 * The signature checks here are written independently of shared/payment-channels/chan-a (only the
 * AES-GCM sealing is shared), so a mistake in our signing code fails against this server.
 */
export interface ChanAServerTrade {
  tradeState: 'SUCCESS' | 'NOTPAY' | 'CLOSED' | 'REFUND' | 'USERPAYING' | 'PAYERROR' | (string & {});
  /** Minor units (fen). */
  total: number;
  currency?: string;
  transactionId?: string;
}

export interface ChanAServerRequest {
  method: string;
  /** Path with query, as received. */
  path: string;
  /** The parsed JSON body; null when there was none (GET) or it was not JSON. */
  body: unknown;
  rawBody: string;
  headers: IncomingMessage['headers'];
  /** The Authorization header verified (mchid, serial_no, timestamp, signature over this exact request). */
  authorized: boolean;
}

export interface ChanAServerRefund {
  outTradeNo: string;
  outRefundNo: string;
  refundId: string;
  refund: number;
  total: number;
  reason?: string;
  notifyUrl?: string;
}

export interface ChanAServerOrder {
  kind: 'native' | 'jsapi';
  outTradeNo: string;
  description: string;
  total: number;
  notifyUrl: string;
  timeExpire?: string;
  payerOpenId?: string;
}

export interface ChanANotificationEvent {
  id?: string;
  eventType: string;
  /** The plaintext resource (see paidTransaction / refundResult). */
  resource: object;
  summary?: string;
  /** AAD used and declared; default `transaction` or `refund` as the channel does. May be ''. */
  associatedData?: string;
}

/** Each option forges one thing; a notification built with none of them verifies. */
export interface ChanANotificationTamper {
  /** Change one bit of the body after signing. */
  flipBodyBit?: boolean;
  flipSignatureBit?: boolean;
  /** Change one bit of the GCM tag (the body is signed after, so only decryption fails). */
  flipTagBit?: boolean;
  /** Encrypt with the event's AAD, declare this one. */
  associatedData?: string;
  /** `Wechatpay-Serial` to send instead of the real key id. */
  serial?: string;
  /** Sign with a timestamp this far from now. */
  timestampOffsetSeconds?: number;
}

/** How to spoil the next answer on a path (the client must refuse it). */
export interface ChanAResponseTamper {
  flipSignatureBit?: boolean;
  unsigned?: boolean;
  serial?: string;
  timestampOffsetSeconds?: number;
}

/** How an open-platform (`/cgi-bin/…`) answer is spoiled: an HTTP status, an errcode, or a body that is not JSON. */
export type ChanAOpenFailure =
  | { kind: 'http'; status: number }
  | { kind: 'errcode'; errcode: number; errmsg?: string }
  | { kind: 'garbage' };

export type ChanAOpenPath = '/cgi-bin/token' | '/cgi-bin/ticket/getticket';

/**
 * The official-account API the JS-SDK signature needs: `GET /cgi-bin/token` (AppID and AppSecret of
 * an account registered with `officialAccount`) and `GET /cgi-bin/ticket/getticket` (a live token).
 */
export interface ChanAJssdkEndpoints {
  /** Requests received on each endpoint, answered or failed. */
  calls: { token: number; ticket: number };
  /** The jsapi_ticket handed out for `appId` (a random one until setTicket). */
  ticketOf(appId: string): string;
  setTicket(appId: string, ticket: string): void;
  /** The next `times` requests on `path` fail as asked (counted all the same). */
  failNext(path: ChanAOpenPath, failure: ChanAOpenFailure, times?: number): void;
  /** Every access token issued so far expires: the ticket endpoint answers them errcode 42001. */
  expireAccessTokens(): void;
  /** Milliseconds each open-platform request waits before it is answered (default 0). */
  delayMs: number;
}

export interface ChanAServer {
  url: string;
  /** Every CHAN_A_* variable, pointing at this server. */
  env: Record<string, string>;
  requests: ChanAServerRequest[];
  refunds: ChanAServerRefund[];
  orders: ChanAServerOrder[];
  /** What the query endpoint answers for this order (creates or replaces it). */
  setTrade(outTradeNo: string, trade: ChanAServerTrade): void;
  /** The next request whose path starts with `path` answers `status` with `body` (signed). */
  failNext(path: string, status: number, body?: { code: string; message: string }): void;
  /** The next answer on a path starting with `path` is spoiled as asked. */
  tamperNextResponse(path: string, tamper: ChanAResponseTamper): void;
  notification(event: ChanANotificationEvent, tamper?: ChanANotificationTamper): { headers: Record<string, string>; body: Buffer };
  /** POSTs notification(event, tamper) to our service. */
  notify(targetUrl: string, event: ChanANotificationEvent, tamper?: ChanANotificationTamper): Promise<Response>;
  /** Registers an official account (AppID and AppSecret) the OAuth endpoint accepts. */
  officialAccount(appId: string, secret: string): void;
  /** A base web-authorization code for `openid` of `appId`: `/sns/oauth2/access_token` exchanges it once. */
  registerAuthCode(code: string, grant: { appId: string; openid: string }): void;
  /** The OAuth code exchanges received (appid, code; the secret is checked, never recorded). */
  oauthRequests: Array<{ appId: string | null; code: string | null }>;
  /** `/cgi-bin/token` and `/cgi-bin/ticket/getticket`, with counters and ways to fail. */
  jssdk: ChanAJssdkEndpoints;
  /** The decrypted resource of a TRANSACTION.SUCCESS notification. */
  paidTransaction(input: { outTradeNo: string; total: number; currency?: string; transactionId?: string }): Record<string, unknown>;
  /** The decrypted resource of a REFUND.* notification. */
  refundResult(input: { outTradeNo: string; outRefundNo: string; status: 'SUCCESS' | 'ABNORMAL' | 'CLOSED'; refund: number; total: number }): Record<string, unknown>;
  close(): Promise<void>;
}

const WINDOW_SECONDS = 300;
const AUTH_SCHEME = 'WECHATPAY2-SHA256-RSA2048';
const tradeStateDesc: Record<string, string> = {
  SUCCESS: '支付成功', NOTPAY: '未支付', CLOSED: '已关闭', REFUND: '转入退款', USERPAYING: '用户支付中', PAYERROR: '支付失败',
};

type Answer = { status: number; body: unknown; signed: boolean };
type Json = Record<string, unknown>;

export async function startChanAServer(): Promise<ChanAServer> {
  const merchant = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const platform = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const mchId = `19${digits(8)}`;
  const appId = `wx${randomBytes(8).toString('hex')}`;
  const merchantSerial = randomBytes(20).toString('hex').toUpperCase();
  const platformPublicKeyId = `PUB_KEY_ID_0114${digits(24)}`;
  const apiV3Key = alphanumeric(32);

  const trades = new Map<string, ChanAServerTrade>();
  const requests: ChanAServerRequest[] = [];
  const refunds: ChanAServerRefund[] = [];
  const orders: ChanAServerOrder[] = [];
  const failures: Array<{ path: string; answer: Answer }> = [];
  const responseTampers: Array<{ path: string; tamper: ChanAResponseTamper }> = [];
  const officialAccounts = new Map<string, string>();
  const authCodes = new Map<string, { appId: string; openid: string }>();
  const oauthRequests: Array<{ appId: string | null; code: string | null }> = [];

  /**
   * The official-account OAuth code exchange (`GET /sns/oauth2/access_token`): not a merchant API,
   * so no Authorization and no signature. A code works once, for the AppID it was issued to.
   */
  function oauthAccessToken(url: URL): { status: number; body: Json } {
    const appid = url.searchParams.get('appid');
    const secret = url.searchParams.get('secret');
    const code = url.searchParams.get('code');
    oauthRequests.push({ appId: appid, code });
    if (url.searchParams.get('grant_type') !== 'authorization_code') return { status: 200, body: { errcode: 40002, errmsg: 'invalid grant_type' } };
    if (!appid || !officialAccounts.has(appid)) return { status: 200, body: { errcode: 40013, errmsg: 'invalid appid' } };
    if (officialAccounts.get(appid) !== secret) return { status: 200, body: { errcode: 40125, errmsg: 'invalid appsecret' } };
    const grant = code ? authCodes.get(code) : undefined;
    if (!code || !grant || grant.appId !== appid) return { status: 200, body: { errcode: 40029, errmsg: 'invalid code' } };
    authCodes.delete(code);
    return {
      status: 200,
      body: { access_token: randomBytes(24).toString('base64url'), expires_in: 7200, refresh_token: randomBytes(24).toString('base64url'), openid: grant.openid, scope: 'snsapi_base' },
    };
  }

  const jssdkTickets = new Map<string, string>();
  /** Issued access tokens: the AppID each belongs to, and whether expireAccessTokens() ended it. */
  const accessTokens = new Map<string, { appId: string; expired: boolean }>();
  const openFailures: Array<{ path: ChanAOpenPath; failure: ChanAOpenFailure }> = [];
  const ticketOf = (id: string) => {
    if (!jssdkTickets.has(id)) jssdkTickets.set(id, randomBytes(60).toString('base64url'));
    return jssdkTickets.get(id)!;
  };
  const jssdk: ChanAJssdkEndpoints = {
    calls: { token: 0, ticket: 0 },
    ticketOf,
    setTicket(id, ticket) {
      jssdkTickets.set(id, ticket);
    },
    failNext(path, failure, times = 1) {
      for (let i = 0; i < times; i += 1) openFailures.push({ path, failure });
    },
    expireAccessTokens() {
      for (const token of accessTokens.values()) token.expired = true;
    },
    delayMs: 0,
  };

  /** `GET /cgi-bin/token` (client_credential) and `GET /cgi-bin/ticket/getticket` (type=jsapi): unsigned, errors as errcode. */
  function openPlatform(path: ChanAOpenPath, url: URL): { status: number; body: Json | string } {
    jssdk.calls[path === '/cgi-bin/token' ? 'token' : 'ticket'] += 1;
    const failAt = openFailures.findIndex((f) => f.path === path);
    if (failAt >= 0) {
      const { failure } = openFailures.splice(failAt, 1)[0]!;
      if (failure.kind === 'http') return { status: failure.status, body: `<html>${failure.status} upstream trouble</html>` };
      if (failure.kind === 'garbage') return { status: 200, body: '<html>not json: upstream garbage</html>' };
      return { status: 200, body: { errcode: failure.errcode, errmsg: failure.errmsg ?? `failNext ${failure.errcode}` } };
    }
    const q = url.searchParams;
    if (path === '/cgi-bin/token') {
      const appid = q.get('appid');
      if (q.get('grant_type') !== 'client_credential') return { status: 200, body: { errcode: 40002, errmsg: 'invalid grant_type' } };
      if (!appid || !officialAccounts.has(appid)) return { status: 200, body: { errcode: 40013, errmsg: 'invalid appid' } };
      if (officialAccounts.get(appid) !== q.get('secret')) return { status: 200, body: { errcode: 40125, errmsg: 'invalid appsecret' } };
      const token = randomBytes(48).toString('base64url');
      accessTokens.set(token, { appId: appid, expired: false });
      return { status: 200, body: { access_token: token, expires_in: 7200 } };
    }
    const issued = accessTokens.get(q.get('access_token') ?? '');
    if (!issued) return { status: 200, body: { errcode: 40001, errmsg: 'invalid credential, access_token is invalid or not latest' } };
    if (issued.expired) return { status: 200, body: { errcode: 42001, errmsg: 'access_token expired' } };
    if (q.get('type') !== 'jsapi') return { status: 200, body: { errcode: 40097, errmsg: 'invalid args' } };
    return { status: 200, body: { errcode: 0, errmsg: 'ok', ticket: ticketOf(issued.appId), expires_in: 7200 } };
  }

  /** `Wechatpay-*` headers over `${timestamp}\n${nonce}\n${body}\n`, signed with the platform private key. */
  function signedHeaders(body: Buffer, tamper: { flipSignatureBit?: boolean; serial?: string; timestampOffsetSeconds?: number } = {}) {
    const timestamp = String(Math.floor(Date.now() / 1000) + (tamper.timestampOffsetSeconds ?? 0));
    const nonce = alphanumeric(32);
    const message = Buffer.concat([Buffer.from(`${timestamp}\n${nonce}\n`), body, Buffer.from('\n')]);
    const signature = sign('sha256', message, platform.privateKey);
    if (tamper.flipSignatureBit) signature[0]! ^= 0x01;
    return {
      'Wechatpay-Timestamp': timestamp,
      'Wechatpay-Nonce': nonce,
      'Wechatpay-Signature': signature.toString('base64'),
      'Wechatpay-Serial': tamper.serial ?? platformPublicKeyId,
      'Wechatpay-Signature-Type': AUTH_SCHEME,
      'Request-ID': randomUUID(),
    };
  }

  /** null when the request's Authorization is good, else what is wrong with it. */
  function authorizationProblem(method: string, path: string, rawBody: string, header: string | undefined): string | null {
    if (!header?.startsWith(`${AUTH_SCHEME} `)) return `Authorization must use ${AUTH_SCHEME}`;
    const params = Object.fromEntries([...header.slice(AUTH_SCHEME.length + 1).matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    const { mchid, nonce_str: nonce, signature, timestamp, serial_no: serial } = params;
    if (mchid !== mchId) return 'mchid does not match';
    if (serial !== merchantSerial) return 'serial_no is not the merchant certificate';
    if (!nonce || !signature || !timestamp || !/^\d+$/.test(timestamp)) return 'nonce_str, signature and timestamp are required';
    if (Math.abs(Date.now() / 1000 - Number(timestamp)) >= WINDOW_SECONDS) return 'timestamp expired';
    const message = `${method}\n${path}\n${timestamp}\n${nonce}\n${rawBody}\n`;
    const good = verify('sha256', Buffer.from(message), merchant.publicKey, Buffer.from(signature, 'base64'));
    return good ? null : 'signature does not verify with the merchant public key';
  }

  function route(method: string, url: URL, body: Json): Answer {
    const path = url.pathname;
    const tradeQuery = /^\/v3\/pay\/transactions\/out-trade-no\/([^/]+)$/.exec(path);
    if (method === 'GET' && tradeQuery) return queryTrade(decodeURIComponent(tradeQuery[1]!), url.searchParams.get('mchid'));
    if (method === 'POST' && path === '/v3/refund/domestic/refunds') return createRefund(body);
    if (method === 'POST' && path === '/v3/pay/transactions/native') return createOrder('native', body);
    if (method === 'POST' && path === '/v3/pay/transactions/jsapi') return createOrder('jsapi', body);
    return error(404, 'NOT_FOUND', `no such API: ${method} ${path}`);
  }

  function queryTrade(outTradeNo: string, mchid: string | null): Answer {
    if (mchid !== mchId) return error(400, 'PARAM_ERROR', 'mchid is missing or not this merchant');
    const trade = trades.get(outTradeNo);
    if (!trade) return error(404, 'ORDER_NOT_EXIST', '订单不存在');
    const currency = trade.currency ?? 'CNY';
    const paid = trade.tradeState === 'SUCCESS' || trade.tradeState === 'REFUND';
    return ok({
      appid: appId,
      mchid: mchId,
      out_trade_no: outTradeNo,
      ...(trade.transactionId ? { transaction_id: trade.transactionId } : {}),
      trade_type: 'NATIVE',
      trade_state: trade.tradeState,
      trade_state_desc: tradeStateDesc[trade.tradeState] ?? trade.tradeState,
      ...(paid ? { bank_type: 'OTHERS', success_time: chinaTime(new Date()), payer: { openid: 'oUpF8uMuAJO_M2pxb1Q9zNjWeS6o' } } : {}),
      amount: { total: trade.total, currency, payer_currency: currency, ...(paid ? { payer_total: trade.total } : {}) },
    });
  }

  function createRefund(body: Json): Answer {
    const amount = asJson(body.amount);
    const outTradeNo = body.out_trade_no;
    const outRefundNo = body.out_refund_no;
    if (typeof outTradeNo !== 'string' || typeof outRefundNo !== 'string' || !amount
      || !isPositiveInt(amount.refund) || !isPositiveInt(amount.total) || amount.currency !== 'CNY'
      || (body.notify_url !== undefined && typeof body.notify_url !== 'string')) {
      return error(400, 'PARAM_ERROR', 'out_trade_no, out_refund_no and amount { refund, total, currency: CNY } are required');
    }
    // The channel answers a repeated out_refund_no with the refund it already has.
    const earlier = refunds.find((r) => r.outRefundNo === outRefundNo);
    if (earlier) return ok(refundAnswer(earlier));
    const trade = trades.get(outTradeNo);
    if (!trade) return error(404, 'RESOURCE_NOT_EXISTS', '订单不存在');
    if (trade.tradeState !== 'SUCCESS' && trade.tradeState !== 'REFUND') return error(400, 'INVALID_REQUEST', '订单未支付');
    if (amount.total !== trade.total) return error(400, 'PARAM_ERROR', '订单金额与原订单不一致');
    const refunded = refunds.filter((r) => r.outTradeNo === outTradeNo).reduce((sum, r) => sum + r.refund, 0);
    if (refunded + amount.refund > trade.total) return error(400, 'INVALID_REQUEST', '申请退款金额超过订单可退金额');
    const recorded: ChanAServerRefund = {
      outTradeNo, outRefundNo, refundId: `50${digits(27)}`, refund: amount.refund, total: amount.total,
      ...(typeof body.reason === 'string' ? { reason: body.reason } : {}),
      ...(typeof body.notify_url === 'string' ? { notifyUrl: body.notify_url } : {}),
    };
    refunds.push(recorded);
    trade.tradeState = 'REFUND';
    return ok(refundAnswer(recorded));
  }

  function refundAnswer(refund: ChanAServerRefund): Json {
    return {
      refund_id: refund.refundId,
      out_refund_no: refund.outRefundNo,
      transaction_id: trades.get(refund.outTradeNo)?.transactionId ?? '',
      out_trade_no: refund.outTradeNo,
      channel: 'ORIGINAL',
      user_received_account: '支付用户零钱',
      create_time: chinaTime(new Date()),
      status: 'PROCESSING',
      funds_account: 'AVAILABLE',
      amount: { total: refund.total, refund: refund.refund, payer_total: refund.total, payer_refund: refund.refund, currency: 'CNY' },
    };
  }

  function createOrder(kind: 'native' | 'jsapi', body: Json): Answer {
    const amount = asJson(body.amount);
    const payer = asJson(body.payer);
    if (body.appid !== appId || body.mchid !== mchId) return error(400, 'PARAM_ERROR', 'appid and mchid must be this merchant');
    if (typeof body.description !== 'string' || typeof body.out_trade_no !== 'string' || typeof body.notify_url !== 'string'
      || !amount || !isPositiveInt(amount.total) || (amount.currency !== undefined && amount.currency !== 'CNY')
      || (body.time_expire !== undefined && typeof body.time_expire !== 'string')
      || (kind === 'jsapi' && typeof payer?.openid !== 'string')) {
      return error(400, 'PARAM_ERROR', 'description, out_trade_no, notify_url, amount.total (and payer.openid for JSAPI) are required');
    }
    const existing = trades.get(body.out_trade_no);
    if (existing && existing.tradeState !== 'NOTPAY') {
      return existing.tradeState === 'CLOSED' ? error(400, 'ORDER_CLOSED', '订单已关闭') : error(403, 'ORDERPAID', '订单已支付');
    }
    trades.set(body.out_trade_no, { tradeState: 'NOTPAY', total: amount.total });
    orders.push({
      kind, outTradeNo: body.out_trade_no, description: body.description, total: amount.total, notifyUrl: body.notify_url,
      ...(typeof body.time_expire === 'string' ? { timeExpire: body.time_expire } : {}),
      ...(kind === 'jsapi' ? { payerOpenId: String(payer?.openid) } : {}),
    });
    return kind === 'native'
      ? ok({ code_url: `weixin://wxpay/bizpayurl?pr=${alphanumeric(9)}` })
      : ok({ prepay_id: `wx${randomBytes(17).toString('hex')}` });
  }

  function send(res: ServerResponse, path: string, answer: Answer) {
    const body = Buffer.from(JSON.stringify(answer.body));
    const tamperAt = answer.signed ? responseTampers.findIndex((t) => path.startsWith(t.path)) : -1;
    const tamper = tamperAt >= 0 ? responseTampers.splice(tamperAt, 1)[0]!.tamper : {};
    const headers = answer.signed && !tamper.unsigned ? signedHeaders(body, tamper) : { 'Request-ID': randomUUID() };
    res.writeHead(answer.status, { ...headers, 'Content-Type': 'application/json', 'Content-Length': body.length });
    res.end(body);
  }

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const method = req.method ?? 'GET';
      const path = req.url ?? '/';
      const rawBody = Buffer.concat(chunks).toString('utf8');
      let body: unknown = null;
      try {
        body = rawBody ? JSON.parse(rawBody) : null;
      } catch {
        // recorded as null; the routes answer PARAM_ERROR
      }
      const oauthUrl = new URL(path, 'http://chan-a.local');
      if (method === 'GET' && oauthUrl.pathname === '/sns/oauth2/access_token') {
        const answer = oauthAccessToken(oauthUrl);
        return send(res, path, { ...answer, signed: false });
      }
      if (method === 'GET' && (oauthUrl.pathname === '/cgi-bin/token' || oauthUrl.pathname === '/cgi-bin/ticket/getticket')) {
        const answer = openPlatform(oauthUrl.pathname, oauthUrl);
        const text = Buffer.from(typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body));
        setTimeout(() => {
          res.writeHead(answer.status, { 'Content-Type': typeof answer.body === 'string' ? 'text/html' : 'application/json', 'Content-Length': text.length });
          res.end(text);
        }, jssdk.delayMs);
        return;
      }
      const problem = authorizationProblem(method, path, rawBody, req.headers.authorization);
      requests.push({ method, path, body, rawBody, headers: req.headers, authorized: problem === null });
      // The channel does not sign answers to requests it could not authenticate.
      if (problem) return send(res, path, { status: 401, body: { code: 'SIGN_ERROR', message: problem }, signed: false });
      const url = new URL(path, 'http://chan-a.local');
      const failAt = failures.findIndex((f) => url.pathname.startsWith(f.path));
      if (failAt >= 0) return send(res, path, failures.splice(failAt, 1)[0]!.answer);
      send(res, path, route(method, url, asJson(body) ?? {}));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  function notification(event: ChanANotificationEvent, tamper: ChanANotificationTamper = {}) {
    const originalType = event.eventType.startsWith('REFUND.') ? 'refund' : 'transaction';
    const aad = event.associatedData ?? originalType;
    const sealed = encryptChanAResource(Buffer.from(apiV3Key, 'utf8'), event.resource, { associatedData: aad });
    let ciphertext = sealed.ciphertext;
    if (tamper.flipTagBit) {
      const bytes = Buffer.from(ciphertext, 'base64');
      bytes[bytes.length - 1]! ^= 0x01;
      ciphertext = bytes.toString('base64');
    }
    const body = Buffer.from(JSON.stringify({
      id: event.id ?? randomUUID(),
      create_time: chinaTime(new Date()),
      resource_type: 'encrypt-resource',
      event_type: event.eventType,
      summary: event.summary ?? (originalType === 'refund' ? '退款状态变更' : '支付成功'),
      resource: {
        original_type: originalType,
        algorithm: sealed.algorithm,
        ciphertext,
        associated_data: tamper.associatedData ?? aad,
        nonce: sealed.nonce,
      },
    }));
    const headers = { ...signedHeaders(body, tamper), 'Content-Type': 'application/json' };
    // Flip inside the id's value so the body stays JSON: only the signature can notice.
    if (tamper.flipBodyBit) body[body.indexOf('"id":"') + 6]! ^= 0x01;
    return { headers, body };
  }

  return {
    url,
    env: {
      CHAN_A_API_BASE_URL: url,
      CHAN_A_OPEN_BASE_URL: url,
      CHAN_A_MCH_ID: mchId,
      CHAN_A_APP_ID: appId,
      CHAN_A_MERCHANT_SERIAL: merchantSerial,
      CHAN_A_MERCHANT_PRIVATE_KEY: merchant.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      CHAN_A_API_V3_KEY: apiV3Key,
      CHAN_A_PLATFORM_PUBLIC_KEY: platform.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      CHAN_A_PLATFORM_PUBLIC_KEY_ID: platformPublicKeyId,
    },
    requests,
    refunds,
    orders,
    setTrade(outTradeNo, trade) {
      const paid = trade.tradeState === 'SUCCESS' || trade.tradeState === 'REFUND';
      const id = trade.transactionId ?? trades.get(outTradeNo)?.transactionId ?? (paid ? transactionId() : undefined);
      trades.set(outTradeNo, { ...trade, ...(id ? { transactionId: id } : {}) });
    },
    failNext(path, status, body = { code: status >= 500 ? 'SYSTEM_ERROR' : 'INVALID_REQUEST', message: 'failNext' }) {
      failures.push({ path, answer: { status, body, signed: true } });
    },
    tamperNextResponse(path, tamper) {
      responseTampers.push({ path, tamper });
    },
    officialAccount(id, secret) {
      officialAccounts.set(id, secret);
    },
    registerAuthCode(code, grant) {
      authCodes.set(code, grant);
    },
    oauthRequests,
    jssdk,
    notification,
    notify(targetUrl, event, tamper) {
      const { headers, body } = notification(event, tamper);
      return fetch(targetUrl, { method: 'POST', headers, body });
    },
    paidTransaction({ outTradeNo, total, currency = 'CNY', transactionId: id }) {
      return {
        mchid: mchId,
        appid: appId,
        out_trade_no: outTradeNo,
        transaction_id: id ?? trades.get(outTradeNo)?.transactionId ?? transactionId(),
        trade_type: 'NATIVE',
        trade_state: 'SUCCESS',
        trade_state_desc: '支付成功',
        bank_type: 'OTHERS',
        attach: '',
        success_time: chinaTime(new Date()),
        payer: { openid: 'oUpF8uMuAJO_M2pxb1Q9zNjWeS6o' },
        amount: { total, payer_total: total, currency, payer_currency: currency },
      };
    },
    refundResult({ outTradeNo, outRefundNo, status, refund, total }) {
      return {
        mchid: mchId,
        out_trade_no: outTradeNo,
        transaction_id: trades.get(outTradeNo)?.transactionId ?? transactionId(),
        out_refund_no: outRefundNo,
        refund_id: refunds.find((r) => r.outRefundNo === outRefundNo)?.refundId ?? `50${digits(27)}`,
        refund_status: status,
        ...(status === 'SUCCESS' ? { success_time: chinaTime(new Date()) } : {}),
        user_received_account: '支付用户零钱',
        amount: { total, refund, payer_total: total, payer_refund: refund, currency: 'CNY' },
      };
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const ok = (body: Json): Answer => ({ status: 200, body, signed: true });
const error = (status: number, code: string, message: string): Answer => ({ status, body: { code, message }, signed: true });
const asJson = (value: unknown): Json | null => (typeof value === 'object' && value !== null && !Array.isArray(value) ? value as Json : null);
const isPositiveInt = (value: unknown): value is number => Number.isInteger(value) && (value as number) > 0;
const digits = (n: number) => Array.from({ length: n }, () => randomInt(10)).join('');
const transactionId = () => `4200${digits(24)}`;
const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const alphanumeric = (n: number) => Array.from({ length: n }, () => ALNUM[randomInt(ALNUM.length)]).join('');
/** RFC 3339 in China time, as the channel writes its times. */
const chinaTime = (date: Date) => `${new Date(date.getTime() + 8 * 3600_000).toISOString().slice(0, 19)}+08:00`;
