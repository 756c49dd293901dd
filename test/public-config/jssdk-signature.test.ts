import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commands } from '../../scripts/cli/commands.js';
import { parseFlags } from '../../scripts/cli/flags.js';
import { createOAuthApp } from '../../shared/credentials/oauth/apps.js';
import { setAppDisabled } from '../../shared/credentials/oauth/repository.js';
import { setOfficialAccount } from '../../shared/hardware-sales/official-accounts.js';
import { createUser } from '../../shared/identity/service.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { startChanAServer, type ChanAServer } from '../harness/chan-a-server.js';
import { withSetting } from '../harness/settings.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

// GET /public/chan_a/jssdk-signature (spec §4.10, §7.6) against a local chan_a open platform: the
// signature over the channel's ticket, the ticket cached per AppID with one refresh at a time, and
// every refusal made before any channel call.
describe('GET /public/chan_a/jssdk-signature', () => {
  let chan: ChanAServer;
  let stack: TestStack;
  let ownerId: string;
  let ipCounter = 0;
  const freshIp = () => `10.77.${Math.floor((ipCounter += 1) / 250)}.${(ipCounter % 250) + 1}`;
  const SAFE_DOMAINS = ['shop.example', 'm.shop.example'];
  const FAILED = { success: false, error: { code: 'INTERNAL_ERROR', message: 'The JS-SDK signature could not be made now; try again later' } };

  beforeAll(async () => {
    chan = await startChanAServer();
    stack = await createTestStack({ CHAN_A_OPEN_BASE_URL: chan.url });
    // The local channel is on 127.0.0.1: the SSRF guard lets it through only by this setting.
    await upsertSiteSetting(stack.db, 'http_block.allow_hosts', ['127.0.0.1']);
    stack.deps.settings.invalidate('http_block.allow_hosts');
    ownerId = (await createUser(stack.db, { email: `jssdk-${randomBytes(4).toString('hex')}@example.com`, name: 'Shop owner' })).id;
  }, 60_000);
  afterAll(async () => {
    await stack?.close();
    await chan?.close();
  });

  const newAppId = () => `wx${randomBytes(8).toString('hex')}`;
  const oauthClient = () => createOAuthApp(stack.db, {
    ownerId, name: 'Shop', reviewStatus: 'approved', client: { platform: 'web', redirectUris: ['https://shop.example/cb'], scopes: ['orders:checkout'] },
  });
  /** An OAuth client with an official account (a new AppID, so a cold ticket cache), known to the channel. */
  async function account(options: { channelSecret?: string } = {}) {
    const { clientId, appId: oauthAppId } = await oauthClient();
    const appId = newAppId();
    const appSecret = randomBytes(16).toString('hex');
    await setOfficialAccount(stack.deps, { clientId, appId, appSecret, safeDomains: SAFE_DOMAINS });
    chan.officialAccount(appId, options.channelSecret ?? appSecret);
    return { clientId, appId, oauthAppId };
  }

  const sign = (query: Record<string, string>, options: { ip?: string; origin?: string } = {}) => stack.app.inject({
    method: 'GET',
    url: `/public/chan_a/jssdk-signature?${new URLSearchParams(query).toString()}`,
    remoteAddress: options.ip ?? freshIp(),
    headers: options.origin === undefined ? {} : { origin: options.origin },
  });
  /** A 200 whose signature is the sha1 of the channel's current ticket of `appId` with `signedUrl`; its data. */
  function expectSigned(res: Awaited<ReturnType<typeof sign>>, appId: string, signedUrl: string) {
    expect(res.statusCode, res.body).toBe(200);
    const data = res.json().data as { appId: string; nonceStr: string; timestamp: number; signature: string; jsApiList: string[] };
    const text = `jsapi_ticket=${chan.jssdk.ticketOf(appId)}&noncestr=${data.nonceStr}&timestamp=${data.timestamp}&url=${signedUrl}`;
    expect(data.signature).toBe(createHash('sha1').update(text).digest('hex'));
    return data;
  }
  /** The channel calls made while `body` runs. */
  async function channelCallsDuring(body: () => Promise<void>) {
    const before = { ...chan.jssdk.calls };
    await body();
    return { token: chan.jssdk.calls.token - before.token, ticket: chan.jssdk.calls.ticket - before.ticket };
  }

  it('signs the page without its fragment with the channel\'s ticket, for an account set by the CLI command', async () => {
    const { clientId } = await oauthClient();
    const appId = newAppId();
    const appSecret = randomBytes(16).toString('hex');
    // The command table and flag parser of scripts/cli.ts, in this process: that entry point only
    // resolves one- and two-word names, so `chan-a account set` cannot be reached as a process yet.
    const args = ['--client-id', clientId, '--app-id', appId, '--app-secret', appSecret, '--safe-domains', 'Shop.example'];
    const printed = await commands['chan-a account set']!(parseFlags(args), {
      config: stack.config, db: () => stack.db, temporalAddress: () => '', warn: () => {},
    });
    expect(printed).toEqual({ clientId, appId });
    chan.officialAccount(appId, appSecret);
    chan.jssdk.setTicket(appId, `ticket-${randomBytes(12).toString('base64url')}`);

    const page = 'https://shop.example/checkout?order=HW1&x=%E4%B8%AD';
    const before = Math.floor(Date.now() / 1000);
    const res = await sign({ client_id: clientId, url: `${page}#/pay?step=2` }, { origin: 'https://shop.example' });
    const after = Math.floor(Date.now() / 1000);
    const { timestamp, nonceStr } = expectSigned(res, appId, page);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.json()).toEqual({
      success: true,
      data: { appId, timestamp, nonceStr: expect.stringMatching(/^[0-9a-f]{32}$/), signature: expect.stringMatching(/^[0-9a-f]{40}$/), jsApiList: ['openAddress'] },
    });
    expect(Number.isInteger(timestamp)).toBe(true);
    expect(timestamp).toBeGreaterThanOrEqual(before);
    expect(timestamp).toBeLessThanOrEqual(after);

    const both = expectSigned(await sign({ client_id: clientId, url: page, apis: 'chooseWXPay, openAddress,chooseWXPay' }), appId, page);
    expect(both.jsApiList).toEqual(['chooseWXPay', 'openAddress']);
    expect(both.nonceStr).not.toBe(nonceStr);
  });

  it('fetches the token and the ticket once for two requests', async () => {
    const { clientId, appId } = await account();
    const calls = await channelCallsDuring(async () => {
      for (const url of ['https://shop.example/a', 'https://m.shop.example/b']) {
        expectSigned(await sign({ client_id: clientId, url }), appId, url);
      }
    });
    expect(calls).toEqual({ token: 1, ticket: 1 });
  });

  it('makes one token call and one ticket call for 20 parallel first requests', async () => {
    const { clientId, appId } = await account();
    chan.jssdk.delayMs = 150;
    try {
      const calls = await channelCallsDuring(async () => {
        const answers = await Promise.all(Array.from({ length: 20 }, () => sign({ client_id: clientId, url: 'https://shop.example/' })));
        const nonces = answers.map((res) => expectSigned(res, appId, 'https://shop.example/').nonceStr);
        expect(new Set(nonces).size).toBe(20);
      });
      expect(calls).toEqual({ token: 1, ticket: 1 });
    } finally {
      chan.jssdk.delayMs = 0;
    }
  });

  it('gets a new access token when the channel refuses the cached one (42001), after a ticket failure that was not cached', async () => {
    const { clientId, appId } = await account();
    const url = 'https://shop.example/p';
    // The token is fetched and kept; the ticket call fails (and that failure is not kept).
    chan.jssdk.failNext('/cgi-bin/ticket/getticket', { kind: 'errcode', errcode: -1, errmsg: 'system busy' });
    const failedCalls = await channelCallsDuring(async () => {
      const failed = await sign({ client_id: clientId, url });
      expect(failed.statusCode, failed.body).toBe(500);
      expect(failed.json()).toEqual(FAILED);
    });
    expect(failedCalls).toEqual({ token: 1, ticket: 1 });

    chan.jssdk.expireAccessTokens();
    const calls = await channelCallsDuring(async () => {
      expectSigned(await sign({ client_id: clientId, url }), appId, url);
    });
    // The ticket call with the expired token (42001), a new token, the ticket again.
    expect(calls).toEqual({ token: 1, ticket: 2 });
  });

  it('refuses every bad request with 400 INVALID_REQUEST or 503 NOT_CONFIGURED, calling no channel and changing nothing', async () => {
    const good = await account();
    const disabled = await account();
    await setAppDisabled(stack.db, disabled.oauthAppId, new Date());
    const { clientId: withoutAccount } = await oauthClient();
    const page = 'https://shop.example/pay';
    const cases: Array<[string, Record<string, string>, string | undefined, number, string]> = [
      ['http url', { client_id: good.clientId, url: 'http://shop.example/pay' }, undefined, 400, 'INVALID_REQUEST'],
      ['foreign host', { client_id: good.clientId, url: 'https://evil.example/pay' }, undefined, 400, 'INVALID_REQUEST'],
      ['subdomain of a safe domain', { client_id: good.clientId, url: 'https://x.shop.example/pay' }, undefined, 400, 'INVALID_REQUEST'],
      ['another port', { client_id: good.clientId, url: 'https://shop.example:8443/pay' }, undefined, 400, 'INVALID_REQUEST'],
      ['not a URL', { client_id: good.clientId, url: 'shop.example/pay' }, undefined, 400, 'INVALID_REQUEST'],
      ['non-whitelisted api', { client_id: good.clientId, url: page, apis: 'openAddress,scanQRCode' }, undefined, 400, 'INVALID_REQUEST'],
      ['missing url', { client_id: good.clientId }, undefined, 400, 'INVALID_REQUEST'],
      ['missing client_id', { url: page }, undefined, 400, 'INVALID_REQUEST'],
      ['blank client_id', { client_id: ' ', url: page }, undefined, 400, 'INVALID_REQUEST'],
      ['Origin mismatch', { client_id: good.clientId, url: page }, 'https://evil.example', 400, 'INVALID_REQUEST'],
      ['Origin of another scheme', { client_id: good.clientId, url: page }, 'http://shop.example', 400, 'INVALID_REQUEST'],
      ['unknown client id', { client_id: `wfc-${randomBytes(12).toString('hex')}`, url: page }, undefined, 503, 'NOT_CONFIGURED'],
      ['client without an account', { client_id: withoutAccount, url: page }, undefined, 503, 'NOT_CONFIGURED'],
      ['disabled app', { client_id: disabled.clientId, url: page }, undefined, 503, 'NOT_CONFIGURED'],
    ];
    const accountsBefore = await stack.db.selectFrom('chan_a_official_accounts').selectAll().orderBy('client_id').execute();
    const calls = await channelCallsDuring(async () => {
      for (const [what, query, origin, status, code] of cases) {
        const res = await sign(query, { origin });
        expect(res.statusCode, `${what}: ${res.body}`).toBe(status);
        expect(res.json(), what).toEqual({ success: false, error: { code, message: expect.any(String) } });
        expect(res.headers['cache-control'], what).toBe('no-store');
      }
    });
    expect(calls).toEqual({ token: 0, ticket: 0 });
    expect(await stack.db.selectFrom('chan_a_official_accounts').selectAll().orderBy('client_id').execute()).toEqual(accountsBefore);

    // Nothing was cached for the good account: its first good request fetches both.
    const firstGood = await channelCallsDuring(async () => {
      expect((await sign({ client_id: good.clientId, url: page }, { origin: 'https://shop.example' })).statusCode).toBe(200);
    });
    expect(firstGood).toEqual({ token: 1, ticket: 1 });
  });

  it('limits calls per IP by public.jssdk_rate_limit with 429 RATE_LIMITED and Retry-After, before any other check', async () => {
    const { clientId } = await account();
    await withSetting(stack, 'public.jssdk_rate_limit', { perMinute: 2 }, async () => {
      const ip = freshIp();
      const query = { client_id: clientId, url: 'https://shop.example/' };
      expect((await sign(query, { ip })).statusCode).toBe(200);
      expect((await sign({ url: 'http://shop.example/' }, { ip })).statusCode).toBe(400);
      const calls = await channelCallsDuring(async () => {
        for (const request of [query, { url: 'http://bad' }]) {
          const limited = await sign(request, { ip });
          expect(limited.statusCode, limited.body).toBe(429);
          expect(limited.json()).toEqual({ success: false, error: { code: 'RATE_LIMITED', message: expect.any(String) } });
          expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
          expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(60);
        }
      });
      expect(calls).toEqual({ token: 0, ticket: 0 });
      // Another address has its own budget.
      expect((await sign(query, { ip: freshIp() })).statusCode).toBe(200);
    });
  });

  it('answers a channel fault (HTTP 500, errcode, not JSON) with 500 INTERNAL_ERROR and no channel text, and succeeds next time', async () => {
    const { clientId } = await account();
    const query = { client_id: clientId, url: 'https://shop.example/' };
    const faults: Array<[Parameters<ChanAServer['jssdk']['failNext']>[0], Parameters<ChanAServer['jssdk']['failNext']>[1]]> = [
      ['/cgi-bin/token', { kind: 'http', status: 500 }],
      ['/cgi-bin/token', { kind: 'errcode', errcode: 45009, errmsg: 'upstream reached max api daily quota limit' }],
      ['/cgi-bin/token', { kind: 'garbage' }],
      ['/cgi-bin/ticket/getticket', { kind: 'http', status: 503 }],
      ['/cgi-bin/ticket/getticket', { kind: 'garbage' }],
    ];
    for (const [path, failure] of faults) {
      chan.jssdk.failNext(path, failure);
      const res = await sign(query);
      expect(res.statusCode, `${path} ${failure.kind}`).toBe(500);
      expect(res.json()).toEqual(FAILED);
      expect(res.body).not.toMatch(/upstream|quota|html|45009|errcode/i);
    }
    expect((await sign(query)).statusCode).toBe(200);
  });

  it('answers 503 NOT_CONFIGURED when the channel refuses the account\'s AppSecret, and caches nothing', async () => {
    const { clientId, appId } = await account({ channelSecret: 'the-real-secret' });
    const query = { client_id: clientId, url: 'https://shop.example/' };
    const calls = await channelCallsDuring(async () => {
      for (let i = 0; i < 2; i += 1) {
        const res = await sign(query);
        expect(res.statusCode, res.body).toBe(503);
        expect(res.json()).toEqual({ success: false, error: { code: 'NOT_CONFIGURED', message: 'The JS-SDK is not configured for this client' } });
      }
    });
    expect(calls).toEqual({ token: 2, ticket: 0 });
    // The operator fixes the secret: the next request works.
    await setOfficialAccount(stack.deps, { clientId, appId, appSecret: 'the-real-secret', safeDomains: SAFE_DOMAINS });
    expect((await sign(query)).statusCode).toBe(200);
  });
});
