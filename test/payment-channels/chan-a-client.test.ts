import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../shared/config.js';
import { ChanAApiError, ChanAResponseError, createChanAClient, type ChanAClient } from '../../shared/payment-channels/chan-a/client.js';
import { chanAConfigFrom, type ChanAConfig } from '../../shared/payment-channels/chan-a/config.js';
import { startChanAServer, type ChanAServer } from '../harness/chan-a-server.js';

/** The client against a local chan_a that checks our signatures and signs its answers (no PostgreSQL, no Temporal). */
describe('chan_a client against the chan_a test server', () => {
  let channel: ChanAServer;
  let cfg: ChanAConfig;
  let client: ChanAClient;

  async function failure(promise: Promise<unknown>): Promise<unknown> {
    const error = await promise.then(() => undefined, (e: unknown) => e);
    expect(error).toBeDefined();
    return error;
  }

  beforeAll(async () => {
    channel = await startChanAServer();
    cfg = chanAConfigFrom(loadConfig(channel.env))!;
    client = createChanAClient(cfg);
  });
  afterAll(() => channel?.close());
  beforeEach(() => { channel.requests.length = 0; });

  it('queries a paid trade by out_trade_no with a signed GET', async () => {
    channel.setTrade('ORDER000001', { tradeState: 'SUCCESS', total: 1990, transactionId: '4200000000000000000000000001' });
    const trade = await client.queryByOutTradeNo('ORDER000001');
    expect(trade).toEqual({
      tradeState: 'SUCCESS', outTradeNo: 'ORDER000001', transactionId: '4200000000000000000000000001',
      amount: { total: 1990, currency: 'CNY' }, successTime: expect.stringMatching(/\+08:00$/),
    });
    expect(channel.requests).toHaveLength(1);
    const request = channel.requests[0]!;
    expect(request).toMatchObject({ method: 'GET', path: `/v3/pay/transactions/out-trade-no/ORDER000001?mchid=${cfg.mchId}`, authorized: true, rawBody: '' });
    expect(request.headers.accept).toBe('application/json');
    expect(request.headers['content-type']).toBeUndefined();
  });

  it('reports an unpaid trade without transaction id or success time', async () => {
    channel.setTrade('ORDER000002', { tradeState: 'NOTPAY', total: 500 });
    expect(await client.queryByOutTradeNo('ORDER000002')).toEqual({ tradeState: 'NOTPAY', outTradeNo: 'ORDER000002', amount: { total: 500, currency: 'CNY' } });
  });

  it('answers null for an order the channel does not know (404 ORDER_NOT_EXIST)', async () => {
    expect(await client.queryByOutTradeNo('NEVER-CREATED')).toBeNull();
    expect(channel.requests[0]!.authorized).toBe(true);
  });

  it('refuses an out_trade_no outside the channel charset before sending anything', async () => {
    const error = await failure(client.queryByOutTradeNo('../../v3/refund'));
    expect(error).toMatchObject({ code: 'PARAM_ERROR', retryable: false });
    expect(channel.requests).toHaveLength(0);
  });

  it('creates a refund, idempotent on out_refund_no', async () => {
    channel.setTrade('ORDER000003', { tradeState: 'SUCCESS', total: 2000 });
    const request = { outTradeNo: 'ORDER000003', outRefundNo: 'REFUND000003', reason: 'customer asked', refundCents: 500, totalCents: 2000, notifyUrl: 'https://svc.example/webhook/chan_a' };
    const refund = await client.createRefund(request);
    expect(refund).toEqual({ refundId: expect.stringMatching(/^50\d{27}$/), status: 'PROCESSING' });
    expect(channel.requests[0]).toMatchObject({
      method: 'POST', path: '/v3/refund/domestic/refunds', authorized: true,
      body: { out_trade_no: 'ORDER000003', out_refund_no: 'REFUND000003', reason: 'customer asked', notify_url: request.notifyUrl, amount: { refund: 500, total: 2000, currency: 'CNY' } },
    });
    expect(channel.requests[0]!.headers['content-type']).toBe('application/json');
    expect(channel.refunds.filter((r) => r.outRefundNo === 'REFUND000003')).toEqual([
      { outTradeNo: 'ORDER000003', outRefundNo: 'REFUND000003', refundId: refund.refundId, refund: 500, total: 2000, reason: 'customer asked', notifyUrl: request.notifyUrl },
    ]);
    // Asking again (e.g. a retried activity) returns the same refund and refunds nothing more.
    expect(await client.createRefund(request)).toEqual(refund);
    expect(channel.refunds.filter((r) => r.outRefundNo === 'REFUND000003')).toHaveLength(1);
  });

  it('surfaces a refund the channel refuses as a non-retryable ChanAApiError', async () => {
    const error = await failure(client.createRefund({ outTradeNo: 'NO-SUCH-ORDER', outRefundNo: 'REFUND000009', refundCents: 1, totalCents: 1 }));
    expect(error).toBeInstanceOf(ChanAApiError);
    expect(error).toMatchObject({ status: 404, code: 'RESOURCE_NOT_EXISTS', retryable: false });
  });

  it('creates a native order (code_url), after which the trade is queryable as NOTPAY', async () => {
    const timeExpire = new Date('2024-03-01T04:05:06.789Z');
    const { codeUrl } = await client.createNativeOrder({ description: 'Credits 100', outTradeNo: 'ORDER000004', amountCents: 1990, notifyUrl: 'https://svc.example/webhook/chan_a', timeExpire });
    expect(codeUrl).toMatch(/^weixin:\/\/wxpay\/bizpayurl\?pr=\w+$/);
    expect(channel.requests[0]!.body).toEqual({
      appid: cfg.appId, mchid: cfg.mchId, description: 'Credits 100', out_trade_no: 'ORDER000004',
      time_expire: '2024-03-01T12:05:06+08:00', notify_url: 'https://svc.example/webhook/chan_a', amount: { total: 1990, currency: 'CNY' },
    });
    expect(channel.orders.at(-1)).toMatchObject({ kind: 'native', outTradeNo: 'ORDER000004', total: 1990 });
    expect(await client.queryByOutTradeNo('ORDER000004')).toMatchObject({ tradeState: 'NOTPAY' });
  });

  it('creates a JSAPI order for a payer (prepay_id)', async () => {
    const { prepayId } = await client.createJsapiOrder({ description: 'Credits 100', outTradeNo: 'ORDER000005', amountCents: 990, notifyUrl: 'https://svc.example/webhook/chan_a', payerOpenId: 'oUpF8uMuAJO_M2pxb1Q9zNjWeS6o' });
    expect(prepayId).toMatch(/^wx[0-9a-f]{34}$/);
    expect(channel.orders.at(-1)).toMatchObject({ kind: 'jsapi', outTradeNo: 'ORDER000005', payerOpenId: 'oUpF8uMuAJO_M2pxb1Q9zNjWeS6o' });
    expect(channel.requests[0]!.body).not.toHaveProperty('time_expire');
  });

  it.each([
    ['a broken signature', { flipSignatureBit: true }, 'bad_signature'],
    ['no signature at all', { unsigned: true }, 'missing_headers'],
    ['another key serial', { serial: 'PUB_KEY_ID_0114000000000000000000000000' }, 'unknown_serial'],
    ['a stale timestamp', { timestampOffsetSeconds: -600 }, 'timestamp_out_of_window'],
  ] as const)('refuses a 2xx answer with %s (ChanAResponseError, not retryable)', async (_, tamper, reason) => {
    channel.setTrade('ORDER000006', { tradeState: 'SUCCESS', total: 100 });
    channel.tamperNextResponse('/v3/pay/transactions/out-trade-no/', tamper);
    const error = await failure(client.queryByOutTradeNo('ORDER000006'));
    expect(error).toBeInstanceOf(ChanAResponseError);
    expect(error).toMatchObject({ reason, retryable: false });
    // The same query with an honest answer goes through.
    expect(await client.queryByOutTradeNo('ORDER000006')).toMatchObject({ tradeState: 'SUCCESS' });
  });

  it.each([
    [500, 'SYSTEM_ERROR', true],
    [503, 'SYSTEM_ERROR', true],
    [429, 'FREQUENCY_LIMITED', true],
    [400, 'PARAM_ERROR', false],
    [403, 'NOT_ENOUGH', false],
  ])('marks a %i %s answer retryable=%s', async (status, code, retryable) => {
    channel.setTrade('ORDER000008', { tradeState: 'SUCCESS', total: 2000 });
    channel.failNext('/v3/refund/domestic/refunds', status, { code, message: 'from failNext' });
    const refund = { outTradeNo: 'ORDER000008', outRefundNo: `REFUND-FAIL-${status}`, refundCents: 1, totalCents: 2000 };
    const error = await failure(client.createRefund(refund));
    expect(error).toBeInstanceOf(ChanAApiError);
    expect(error).toMatchObject({ status, code, message: 'from failNext', retryable });
    // failNext fails one call only.
    expect(await client.createRefund(refund)).toMatchObject({ status: 'PROCESSING' });
  });

  it('is refused with 401 SIGN_ERROR when it signs with a key the channel does not know', async () => {
    const stranger = createChanAClient({ ...cfg, merchantPrivateKey: generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey });
    const error = await failure(stranger.queryByOutTradeNo('ORDER000001'));
    expect(error).toMatchObject({ status: 401, code: 'SIGN_ERROR', retryable: false });
    expect(channel.requests[0]!.authorized).toBe(false);
  });

  it('reports an unreachable channel as a retryable NETWORK_ERROR', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const unreachable = createChanAClient({ ...cfg, apiBaseUrl: `http://127.0.0.1:${port}` });
    const error = await failure(unreachable.queryByOutTradeNo('ORDER000001'));
    expect(error).toMatchObject({ status: null, code: 'NETWORK_ERROR', retryable: true });
    expect((error as Error).message).toContain('ECONNREFUSED');
  });

  it('goes through the injected fetch and gives up after timeoutMs as a retryable TIMEOUT', async () => {
    const seen: string[] = [];
    const hanging: typeof fetch = (input, init) => {
      seen.push(String(input));
      return new Promise((_, reject) => init?.signal?.addEventListener('abort', () => reject(init.signal!.reason)));
    };
    const slow = createChanAClient(cfg, { fetch: hanging, timeoutMs: 50 });
    const error = await failure(slow.createNativeOrder({ description: 'x', outTradeNo: 'ORDER000007', amountCents: 1, notifyUrl: 'https://svc.example/n' }));
    expect(error).toMatchObject({ status: null, code: 'TIMEOUT', retryable: true });
    expect(seen).toEqual([`${channel.url}/v3/pay/transactions/native`]);
  });
});
