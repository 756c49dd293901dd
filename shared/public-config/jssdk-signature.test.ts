import { describe, expect, it } from 'vitest';
import { AppError } from '../errors.js';
import {
  assertSafeHost, checkPageToSign, JsapiTicketCache, jssdkNonce, jssdkSignature, keepMillis, parseJssdkApis, type JssdkUpstreamFault,
} from './jssdk-signature.js';

const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    if (error instanceof AppError) return { status: error.status, code: error.error };
    throw error;
  }
  return null;
};
const INVALID = { status: 400, code: 'INVALID_REQUEST' };

describe('jssdkSignature', () => {
  it('matches the channel\'s published test vector', () => {
    expect(jssdkSignature({
      ticket: 'sM4AOVdWfPE4DxkXGEs8VMCPGGVi4C3VM0P37wVUCFvkVAy_90u5h9nbSlYy3-Sl-HhTdfl2fzFy1AOcHKP7qg',
      nonceStr: 'Wm3WZYTPz0wzccnW',
      timestamp: 1414587457,
      url: 'http://mp.weixin.qq.com?params=value',
    })).toBe('0f9de62fce790f9a083d5c99e95740ceb90c27ed');
  });

  it('signs the url without its fragment', () => {
    const base = { ticket: 't', nonceStr: 'n', timestamp: 1 };
    expect(jssdkSignature({ ...base, url: 'https://a.example/p?x=1#/route#2' })).toBe(jssdkSignature({ ...base, url: 'https://a.example/p?x=1' }));
    expect(jssdkSignature({ ...base, url: 'https://a.example/p?x=1' })).not.toBe(jssdkSignature({ ...base, url: 'https://a.example/p?x=2' }));
  });

  it('makes 32-hex-character nonces that differ', () => {
    const nonces = new Set(Array.from({ length: 100 }, jssdkNonce));
    expect(nonces.size).toBe(100);
    for (const nonce of nonces) expect(nonce).toMatch(/^[0-9a-f]{32}$/);
  });
});

describe('checkPageToSign', () => {
  it('takes an https page URL, signs it as given up to the #, and reports its lower-case host', () => {
    expect(checkPageToSign({ url: 'https://Shop.Example/a/b?c=d&e=%20f#/x?y' })).toEqual({
      signedUrl: 'https://Shop.Example/a/b?c=d&e=%20f', host: 'shop.example', jsApiList: ['openAddress'],
    });
    expect(checkPageToSign({ url: 'https://shop.example', origin: 'https://shop.example' }).host).toBe('shop.example');
  });

  it('refuses what is not an https page on the default port', () => {
    for (const url of [
      'http://shop.example/', 'ftp://shop.example/', '//shop.example/', 'shop.example/page', 'https://', 'https://shop.example:8443/',
      'https://user:pw@shop.example/', 'https://shop.example/a b', 'https://shop.example\\@evil.example/', 'https://shop.example/页',
      ' https://shop.example/', 'https://shop.example/\n',
    ]) {
      expect(refusal(() => checkPageToSign({ url })), url).toEqual(INVALID);
    }
  });

  it('requires a sent Origin to be the url\'s origin exactly', () => {
    const url = 'https://shop.example/pay';
    expect(checkPageToSign({ url, origin: 'https://shop.example' }).signedUrl).toBe(url);
    for (const origin of ['https://evil.example', 'http://shop.example', 'https://shop.example:444', 'https://shop.example/', 'null', '']) {
      expect(refusal(() => checkPageToSign({ url, origin })), origin).toEqual(INVALID);
    }
  });

  it('takes whitelisted apis only, drops blanks and repeats, and defaults to openAddress', () => {
    expect(parseJssdkApis(undefined)).toEqual(['openAddress']);
    expect(parseJssdkApis('')).toEqual(['openAddress']);
    expect(parseJssdkApis(' , ')).toEqual(['openAddress']);
    expect(parseJssdkApis('chooseWXPay')).toEqual(['chooseWXPay']);
    expect(parseJssdkApis('chooseWXPay, openAddress,chooseWXPay,,')).toEqual(['chooseWXPay', 'openAddress']);
    for (const apis of ['scanQRCode', 'openAddress,getLocation', 'openaddress', 'chooseWXPay;openAddress']) {
      expect(refusal(() => parseJssdkApis(apis)), apis).toEqual(INVALID);
    }
  });

  it('allows exactly the listed hosts: no subdomain, parent or look-alike', () => {
    const safe = ['shop.example', 'm.shop.example'];
    expect(refusal(() => assertSafeHost('shop.example', safe))).toBeNull();
    expect(refusal(() => assertSafeHost('m.shop.example', safe))).toBeNull();
    for (const host of ['x.shop.example', 'example', 'evilshop.example', 'shop.example.evil', 'shop.example.']) {
      expect(refusal(() => assertSafeHost(host, safe)), host).toEqual(INVALID);
    }
    expect(refusal(() => assertSafeHost('shop.example', []))).toEqual(INVALID);
  });
});

describe('keepMillis', () => {
  it('keeps a value until a tenth of its life (at most 5 minutes) before it lapses, capped at 7200 s', () => {
    expect(keepMillis(7200)).toBe(6900_000);
    expect(keepMillis(86_400)).toBe(6900_000);
    expect(keepMillis(100)).toBe(90_000);
    expect(keepMillis(undefined)).toBe(6900_000);
    expect(keepMillis(-5)).toBe(6900_000);
  });
});

/** A scripted channel: answers from queues per path, counting calls and recording the URLs asked. */
function fakeChannel() {
  const calls: URL[] = [];
  const scripts: Record<string, Array<() => Response | Promise<Response>>> = { '/cgi-bin/token': [], '/cgi-bin/ticket/getticket': [] };
  const json = (body: unknown) => () => new Response(JSON.stringify(body), { status: 200 });
  const fetchImpl: typeof fetch = async (input) => {
    const url = new URL(String(input));
    calls.push(url);
    const next = scripts[url.pathname]!.shift();
    if (!next) throw new Error(`unscripted call ${url.pathname}`);
    return next();
  };
  const count = (path: string) => calls.filter((url) => url.pathname === path).length;
  return { calls, scripts, json, fetchImpl, tokens: () => count('/cgi-bin/token'), tickets: () => count('/cgi-bin/ticket/getticket') };
}

describe('JsapiTicketCache', () => {
  const account = { appId: 'wxapp1', appSecret: 'very-secret' };
  const setup = () => {
    let now = 1_000_000;
    const faults: JssdkUpstreamFault[] = [];
    const channel = fakeChannel();
    const cache = new JsapiTicketCache({ openBaseUrl: 'https://open.test/', now: () => now, onFault: (fault) => faults.push(fault) });
    return { channel, cache, faults, advance: (ms: number) => { now += ms; } };
  };
  const failure = async (promise: Promise<unknown>) => {
    const error = await promise.then(() => null, (e: unknown) => e);
    expect(error).toBeInstanceOf(AppError);
    return { status: (error as AppError).status, code: (error as AppError).error, message: (error as AppError).message };
  };

  it('fetches a token then a ticket, with the documented query, and keeps both until shortly before they lapse', async () => {
    const { channel, cache, advance } = setup();
    channel.scripts['/cgi-bin/token']!.push(channel.json({ access_token: 'AT1', expires_in: 7200 }));
    channel.scripts['/cgi-bin/ticket/getticket']!.push(channel.json({ errcode: 0, errmsg: 'ok', ticket: 'T1', expires_in: 7200 }));
    expect(await cache.ticket(account, channel.fetchImpl)).toBe('T1');
    expect(channel.calls.map((u) => [u.origin + u.pathname, Object.fromEntries(u.searchParams)])).toEqual([
      ['https://open.test/cgi-bin/token', { grant_type: 'client_credential', appid: 'wxapp1', secret: 'very-secret' }],
      ['https://open.test/cgi-bin/ticket/getticket', { access_token: 'AT1', type: 'jsapi' }],
    ]);
    advance(6899_000);
    expect(await cache.ticket(account, channel.fetchImpl)).toBe('T1');
    expect(channel.calls).toHaveLength(2);

    // 6900 s on, both are refreshed: the token too, fetched with the same lifetime.
    advance(1_000);
    channel.scripts['/cgi-bin/token']!.push(channel.json({ access_token: 'AT2', expires_in: 7200 }));
    channel.scripts['/cgi-bin/ticket/getticket']!.push(channel.json({ errcode: 0, errmsg: 'ok', ticket: 'T2', expires_in: 7200 }));
    expect(await cache.ticket(account, channel.fetchImpl)).toBe('T2');
    expect(channel.calls.at(-1)!.searchParams.get('access_token')).toBe('AT2');
  });

  it('shares one refresh among concurrent callers', async () => {
    const { channel, cache } = setup();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => { release = resolve; });
    channel.scripts['/cgi-bin/token']!.push(async () => {
      await gate;
      return new Response(JSON.stringify({ access_token: 'AT', expires_in: 7200 }));
    });
    channel.scripts['/cgi-bin/ticket/getticket']!.push(channel.json({ errcode: 0, ticket: 'T', expires_in: 7200 }));
    const waiting = Array.from({ length: 20 }, () => cache.ticket(account, channel.fetchImpl));
    release();
    expect(await Promise.all(waiting)).toEqual(Array(20).fill('T'));
    expect([channel.tokens(), channel.tickets()]).toEqual([1, 1]);
  });

  it('gets a new access token once when the ticket call refuses the token, and keeps AppIDs apart', async () => {
    const { channel, cache } = setup();
    channel.scripts['/cgi-bin/token']!.push(channel.json({ access_token: 'OLD', expires_in: 7200 }), channel.json({ access_token: 'NEW', expires_in: 7200 }));
    channel.scripts['/cgi-bin/ticket/getticket']!.push(
      channel.json({ errcode: 42001, errmsg: 'access_token expired' }),
      channel.json({ errcode: 0, ticket: 'T', expires_in: 7200 }),
    );
    expect(await cache.ticket(account, channel.fetchImpl)).toBe('T');
    expect(channel.calls.filter((u) => u.pathname.endsWith('getticket')).map((u) => u.searchParams.get('access_token'))).toEqual(['OLD', 'NEW']);

    channel.scripts['/cgi-bin/token']!.push(channel.json({ access_token: 'B', expires_in: 7200 }));
    channel.scripts['/cgi-bin/ticket/getticket']!.push(channel.json({ errcode: 0, ticket: 'TB', expires_in: 7200 }));
    expect(await cache.ticket({ appId: 'wxapp2', appSecret: 's2' }, channel.fetchImpl)).toBe('TB');
    expect(await cache.ticket(account, channel.fetchImpl)).toBe('T');
    expect([channel.tokens(), channel.tickets()]).toEqual([3, 3]);
  });

  it('answers 500 INTERNAL_ERROR with a fixed message for every channel fault, caches no failure, and never reports a secret', async () => {
    const { channel, cache, faults } = setup();
    const fixed = { status: 500, code: 'INTERNAL_ERROR', message: 'The JS-SDK signature could not be made now; try again later' };
    channel.scripts['/cgi-bin/token']!.push(() => { throw new TypeError('fetch failed for https://open.test/cgi-bin/token?secret=very-secret'); });
    expect(await failure(cache.ticket(account, channel.fetchImpl))).toEqual(fixed);
    channel.scripts['/cgi-bin/token']!.push(() => new Response('upstream says no', { status: 502 }));
    expect(await failure(cache.ticket(account, channel.fetchImpl))).toEqual(fixed);
    channel.scripts['/cgi-bin/token']!.push(() => new Response('<html>garbage</html>'));
    expect(await failure(cache.ticket(account, channel.fetchImpl))).toEqual(fixed);
    channel.scripts['/cgi-bin/token']!.push(channel.json({ errcode: -1, errmsg: 'system error' }));
    expect(await failure(cache.ticket(account, channel.fetchImpl))).toEqual(fixed);
    // A token, then a ticket call that fails twice on the token, then one with no ticket.
    channel.scripts['/cgi-bin/token']!.push(channel.json({ access_token: 'AT', expires_in: 7200 }), channel.json({ access_token: 'AT2', expires_in: 7200 }));
    channel.scripts['/cgi-bin/ticket/getticket']!.push(channel.json({ errcode: 40001 }), channel.json({ errcode: 40014 }), channel.json({ errcode: 0 }));
    expect(await failure(cache.ticket(account, channel.fetchImpl))).toEqual(fixed);
    expect(await failure(cache.ticket(account, channel.fetchImpl))).toEqual(fixed);

    expect(faults.map(({ call, status, errcode, error }) => ({ call, status, errcode, error }))).toEqual([
      { call: 'token', status: undefined, errcode: undefined, error: 'TypeError: fetch failed for https://open.test/cgi-bin/token?secret=***' },
      { call: 'token', status: 502, errcode: undefined, error: undefined },
      { call: 'token', status: 200, errcode: undefined, error: 'not a JSON object' },
      { call: 'token', status: undefined, errcode: -1, error: undefined },
      { call: 'ticket', status: undefined, errcode: 40014, error: undefined },
      { call: 'ticket', status: undefined, errcode: 0, error: undefined },
    ]);
    expect(JSON.stringify(faults)).not.toMatch(/very-secret|"AT2?"/);

    // Nothing failed was kept: the next call asks again and succeeds.
    channel.scripts['/cgi-bin/ticket/getticket']!.push(channel.json({ errcode: 0, ticket: 'T', expires_in: 7200 }));
    expect(await cache.ticket(account, channel.fetchImpl)).toBe('T');
  });

  it('answers 503 NOT_CONFIGURED when the token call refuses the AppID, AppSecret or server IP', async () => {
    const { channel, cache } = setup();
    for (const errcode of [40001, 40013, 40125, 40164, 41002, 41004]) {
      channel.scripts['/cgi-bin/token']!.push(channel.json({ errcode, errmsg: 'invalid appsecret' }));
      expect(await failure(cache.ticket(account, channel.fetchImpl)), String(errcode)).toMatchObject({ status: 503, code: 'NOT_CONFIGURED' });
    }
  });
});
