import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createHttpBlockActivities } from '../../activities/app-runs/http-block.js';
import type { HttpBlockRequest, HttpBlockResult } from '../../shared/app-runs/contracts.js';
import { performHttpRequest } from '../../shared/outbound-http/safe-http-client.js';
import { parseAllowList } from '../../shared/outbound-http/ssrf-guard.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

interface Seen { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }

/** A local server that records every request it receives. */
async function startServer(handler: (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void) {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      handler(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    seen, port, origin: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

type TestServer = Awaited<ReturnType<typeof startServer>>;

describe('http block activity (runHttpBlock) and its SSRF guard', () => {
  let stack: TestStack;
  let main: TestServer; // allowed in most tests
  let other: TestServer; // never allowed unless a test says so
  // Responses under the claim threshold: the activity returns the output itself, not a claim.
  let run: (input: HttpBlockRequest) => Promise<HttpBlockResult>;

  const request = (partial: Partial<HttpBlockRequest> & { url: string }) =>
    run({ runId: 'run-1', blockId: 'http-1', method: 'GET', headers: {}, body: undefined, ...partial });

  async function allow(...entries: string[]) {
    await upsertSiteSetting(stack.db, 'http_block.allow_hosts', entries);
    stack.deps.settings.invalidate();
  }

  async function failure(promise: Promise<unknown>): Promise<ApplicationFailure> {
    const error = await promise.then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(ApplicationFailure);
    return error as ApplicationFailure;
  }

  beforeAll(async () => {
    stack = await createTestStack();
    const { runHttpBlock } = createHttpBlockActivities({ db: stack.db, settings: stack.deps.settings });
    run = async (input) => (await runHttpBlock(input)) as HttpBlockResult;
    other = await startServer((_req, res) => res.end('other'));
    main = await startServer((req, res, body) => {
      const url = new URL(req.url ?? '/', 'http://x');
      switch (url.pathname) {
        case '/json':
          res.setHeader('content-type', 'application/json; charset=utf-8');
          res.setHeader('x-reply', 'yes');
          res.end(JSON.stringify({ hello: 'world', n: 1 }));
          return;
        case '/echo':
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify({ method: req.method, headers: req.headers, body }));
          return;
        case '/text':
          res.setHeader('content-type', 'text/plain');
          res.end('{"not":"parsed"}');
          return;
        case '/gzip':
          res.setHeader('content-type', 'application/problem+json');
          res.setHeader('content-encoding', 'gzip');
          res.end(gzipSync(JSON.stringify({ zipped: true })));
          return;
        case '/status':
          res.statusCode = 404;
          res.setHeader('content-type', 'application/json');
          res.end('{"error":"nope"}');
          return;
        case '/redirect':
          res.statusCode = Number(url.searchParams.get('status') ?? 302);
          res.setHeader('location', url.searchParams.get('to') ?? '/json');
          res.end();
          return;
        case '/chain': {
          const n = Number(url.searchParams.get('n'));
          res.statusCode = 302;
          res.setHeader('location', n > 0 ? `/chain?n=${n - 1}` : '/json');
          res.end();
          return;
        }
        case '/big': // no content-length: the limit must hold while streaming
          res.setHeader('content-type', 'text/plain');
          res.write('a'.repeat(1024 * 1024));
          res.end('b');
          return;
        case '/big-declared':
          res.setHeader('content-type', 'text/plain');
          res.setHeader('content-length', String(2 * 1024 * 1024));
          res.end('a'.repeat(2 * 1024 * 1024));
          return;
        case '/exactly-1mib':
          res.setHeader('content-type', 'text/plain');
          res.end('a'.repeat(1024 * 1024));
          return;
        case '/gzip-bomb':
          res.setHeader('content-type', 'text/plain');
          res.setHeader('content-encoding', 'gzip');
          res.end(gzipSync(Buffer.alloc(8 * 1024 * 1024)));
          return;
        case '/slow':
          return; // never answers
        default:
          res.statusCode = 500;
          res.end();
      }
    });
  });

  afterAll(async () => {
    await main?.close();
    await other?.close();
    await stack?.close();
  });

  beforeEach(async () => {
    main.seen.length = 0;
    other.seen.length = 0;
    await allow(`127.0.0.1:${main.port}`);
  });

  it('GET: JSON body parsed, status and response headers returned, request headers passed', async () => {
    const result = await request({ url: `${main.origin}/json`, headers: { 'X-Custom': 'abc', Authorization: 'Bearer t' } });
    expect(result).toMatchObject({ status: 200, body: { hello: 'world', n: 1 } });
    expect(result.headers).toMatchObject({ 'content-type': 'application/json; charset=utf-8', 'x-reply': 'yes' });
    expect(main.seen).toHaveLength(1);
    expect(main.seen[0]!.headers).toMatchObject({ 'x-custom': 'abc', authorization: 'Bearer t', host: `127.0.0.1:${main.port}` });
  });

  it('POST: an object body is sent as JSON with application/json, a string as is', async () => {
    const json = await request({ method: 'POST', url: `${main.origin}/echo`, body: { a: [1, 2], b: 'ü' } });
    expect(json.body).toMatchObject({ method: 'POST', body: '{"a":[1,2],"b":"ü"}', headers: { 'content-type': 'application/json' } });
    const text = await request({ method: 'PUT', url: `${main.origin}/echo`, body: 'plain=1', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
    expect(text.body).toMatchObject({ method: 'PUT', body: 'plain=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    const custom = await request({ method: 'PATCH', url: `${main.origin}/echo`, body: { x: 1 }, headers: { 'content-type': 'application/merge-patch+json' } });
    expect(custom.body).toMatchObject({ body: '{"x":1}', headers: { 'content-type': 'application/merge-patch+json' } });
  });

  it('returns text for non-JSON responses, decodes gzip and +json, and returns 4xx as output', async () => {
    expect((await request({ url: `${main.origin}/text` })).body).toBe('{"not":"parsed"}');
    expect((await request({ url: `${main.origin}/gzip` })).body).toEqual({ zipped: true });
    expect(await request({ url: `${main.origin}/status` })).toMatchObject({ status: 404, body: { error: 'nope' } });
    expect(await request({ method: 'HEAD', url: `${main.origin}/json` })).toMatchObject({ status: 200, body: '' });
  });

  it('follows redirects (at most 5), re-vetting each hop; 303 turns POST into GET', async () => {
    const redirected = await request({ url: `${main.origin}/redirect?to=/json` });
    expect(redirected).toMatchObject({ status: 200, body: { hello: 'world' } });
    expect(main.seen.map((s) => s.url)).toEqual(['/redirect?to=/json', '/json']);

    const posted = await request({ method: 'POST', url: `${main.origin}/redirect?status=303&to=/echo`, body: { a: 1 } });
    expect(posted.body).toMatchObject({ method: 'GET', body: '' });
    const kept = await request({ method: 'POST', url: `${main.origin}/redirect?status=307&to=/echo`, body: { a: 1 } });
    expect(kept.body).toMatchObject({ method: 'POST', body: '{"a":1}' });

    expect((await request({ url: `${main.origin}/chain?n=4` })).body).toMatchObject({ hello: 'world' }); // 5 redirects
    main.seen.length = 0;
    const tooMany = await failure(request({ url: `${main.origin}/chain?n=5` })); // 6 redirects
    expect(tooMany).toMatchObject({ type: 'TooManyRedirects', nonRetryable: true });
    expect(main.seen).toHaveLength(6);
  });

  it('refuses a server that is not on the allow list, which then sees no request at all', async () => {
    await allow();
    const refused = await failure(request({ url: `${main.origin}/json` }));
    expect(refused).toMatchObject({ type: 'SsrfBlocked', nonRetryable: true });
    expect(refused.message).toContain('127.0.0.1');
    expect(refused.message).toContain('http_block.allow_hosts');
    for (const url of [
      `http://localhost:${main.port}/json`, `http://2130706433:${main.port}/json`, `http://0x7f.1:${main.port}/json`,
      `http://[::ffff:127.0.0.1]:${main.port}/json`, `http://0:${main.port}/json`, `http://[::1]:${main.port}/json`,
    ]) {
      expect(await failure(request({ url })), url).toMatchObject({ type: 'SsrfBlocked', nonRetryable: true });
    }
    expect(main.seen).toHaveLength(0);
  });

  it('allows by host:port only on that port, and by CIDR', async () => {
    expect(await failure(request({ url: `${other.origin}/` }))).toMatchObject({ type: 'SsrfBlocked' });
    expect(other.seen).toHaveLength(0);
    await allow('127.0.0.0/8');
    expect(await request({ url: `${other.origin}/` })).toMatchObject({ status: 200, body: 'other' });
    await allow('localhost');
    expect(await failure(request({ url: `${other.origin}/` }))).toMatchObject({ type: 'SsrfBlocked' }); // the name, not the address
  });

  it('refuses a redirect from an allowed server to a refused address; the target sees nothing', async () => {
    for (const to of [`${other.origin}/`, `http://127.0.0.2:${other.port}/`, `http://localhost:${other.port}/`, 'http://169.254.169.254/latest/meta-data/', `http://[::1]:${other.port}/`]) {
      const refused = await failure(request({ url: `${main.origin}/redirect?to=${encodeURIComponent(to)}` }));
      expect(refused, to).toMatchObject({ type: 'SsrfBlocked', nonRetryable: true });
      expect(refused.message).toContain('Refused redirect 1');
      expect(refused.message).not.toContain(String(other.port)); // the redirect target is not echoed
    }
    expect(other.seen).toHaveLength(0);
    const scheme = await failure(request({ url: `${main.origin}/redirect?to=${encodeURIComponent('file:///etc/passwd')}` }));
    expect(scheme).toMatchObject({ type: 'SsrfBlocked' });
  });

  it('drops Authorization and Cookie on a redirect to another origin', async () => {
    await allow(`127.0.0.1:${main.port}`, `127.0.0.1:${other.port}`);
    await request({ url: `${main.origin}/redirect?to=${encodeURIComponent(`${other.origin}/`)}`, headers: { authorization: 'Bearer secret', cookie: 'a=1', 'x-keep': '1' } });
    expect(other.seen).toHaveLength(1);
    expect(other.seen[0]!.headers.authorization).toBeUndefined();
    expect(other.seen[0]!.headers.cookie).toBeUndefined();
    expect(other.seen[0]!.headers['x-keep']).toBe('1');
  });

  it('fails clearly on a response over 1 MiB (streamed, declared, or decompressed)', async () => {
    // The request itself (the activity would store a body this large as a claim: test/app-runs/large-payloads.test.ts).
    const exact = await performHttpRequest(
      { method: 'GET', headers: {}, body: undefined, url: `${main.origin}/exactly-1mib` },
      { rules: parseAllowList([`127.0.0.1:${main.port}`]) },
    );
    expect(exact.body).toHaveLength(1024 * 1024);
    for (const path of ['/big', '/big-declared', '/gzip-bomb']) {
      const tooLarge = await failure(request({ url: `${main.origin}${path}` }));
      expect(tooLarge, path).toMatchObject({ type: 'ResponseTooLarge', nonRetryable: true });
      expect(tooLarge.message).toContain('1048576 byte limit');
    }
  });

  it('refuses file:, ftp: and credentials, and reports invalid URLs as non-retryable', async () => {
    for (const url of ['file:///etc/passwd', `ftp://127.0.0.1:${main.port}/`, `http://user:pw@127.0.0.1:${main.port}/json`]) {
      expect(await failure(request({ url })), url).toMatchObject({ type: 'SsrfBlocked', nonRetryable: true });
    }
    expect(await failure(request({ url: 'not a url' }))).toMatchObject({ type: 'InvalidUrl', nonRetryable: true });
    expect(await failure(request({ url: `${main.origin}/json`, headers: { 'bad header': 'x' } }))).toMatchObject({ type: 'InvalidRequest', nonRetryable: true });
    expect(main.seen).toHaveLength(0);
  });

  it('reports network errors as retryable, without internal details', async () => {
    const closed = await startServer(() => {});
    const port = closed.port;
    await closed.close();
    await allow(`127.0.0.1:${port}`);
    const refused = await failure(request({ url: `http://127.0.0.1:${port}/x?token=secret` }));
    expect(refused).toMatchObject({ type: 'HttpNetworkError', nonRetryable: false });
    expect(refused.message).toBe(`HTTP request to http://127.0.0.1:${port} failed: connection refused`);
  });

  it('connects to the vetted address, keeping the host name in the Host header (no second lookup)', async () => {
    const result = await performHttpRequest(
      { method: 'GET', url: `http://api.test.invalid:${main.port}/echo`, headers: {}, body: undefined },
      { rules: parseAllowList(['api.test.invalid']), resolve: async () => [{ address: '127.0.0.1', family: 4 }] },
    );
    expect(result.body).toMatchObject({ headers: { host: `api.test.invalid:${main.port}` } });
    // The same name resolving to a refused address is refused without the allow entry.
    await expect(performHttpRequest(
      { method: 'GET', url: `http://api.test.invalid:${main.port}/echo`, headers: {}, body: undefined },
      { rules: [], resolve: async () => [{ address: '127.0.0.1', family: 4 }] },
    )).rejects.toMatchObject({ name: 'SsrfBlockedError' });
    expect(main.seen).toHaveLength(1);
  });

  it('times out (retryable) when the server does not answer', async () => {
    const started = Date.now();
    await expect(performHttpRequest(
      { method: 'GET', url: `${main.origin}/slow`, headers: {}, body: undefined },
      { rules: parseAllowList([`127.0.0.1:${main.port}`]), timeoutMs: 300 },
    )).rejects.toMatchObject({ type: 'HttpTimeout', retryable: true });
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
