import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../api/app.js';
import { createAuthenticator } from '../../shared/credentials/authenticate.js';
import { createDb, type Database } from '../../shared/db/client.js';
import { SiteSettingsCache } from '../../shared/site-settings/cache.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

/**
 * The file's real database behind a TCP relay the test can cut: `cut()` resets every open
 * connection and stops listening (what a PostgreSQL host going away looks like: pooled connections
 * die, new ones are refused); `restore()` listens again on the same port.
 */
async function cuttableRelay(databaseUrl: string) {
  const target = new URL(databaseUrl);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) { sockets.add(s); s.on('error', () => {}); s.on('close', () => sockets.delete(s)); }
    client.pipe(upstream).pipe(client);
  });
  const listen = (port: number) => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  await listen(0);
  const port = (server.address() as net.AddressInfo).port;
  const url = new URL(target); url.port = String(port);
  return {
    url: url.toString(),
    cut: async () => {
      await new Promise<void>((resolve) => { server.close(() => resolve()); for (const s of sockets) s.resetAndDestroy(); });
    },
    restore: () => listen(port),
    close: () => new Promise<void>((resolve) => { for (const s of sockets) s.destroy(); if (server.listening) server.close(() => resolve()); else resolve(); }),
  };
}

interface LogLine { level: number; msg: string; dependency?: string }

describe('PostgreSQL outage: every route answers 503 dependency_unavailable with Retry-After', () => {
  let stack: TestStack;
  let relay: Awaited<ReturnType<typeof cuttableRelay>>;
  let db: Database;
  let app: Awaited<ReturnType<typeof buildApp>>;
  let apiKey: string;
  const logs: LogLine[] = [];

  beforeAll(async () => {
    stack = await createTestStack();
    ({ apiKey } = await credentialFactory(stack).fundedTenant());
    relay = await cuttableRelay(stack.databaseUrl);
    // The API as in production, except that every part reading PostgreSQL goes through the relay.
    db = createDb(relay.url, { poolSize: 3 });
    const settings = new SiteSettingsCache(db);
    const authenticator = createAuthenticator({ db, idp: stack.deps.idp, scheduleTokens: stack.deps.scheduleTokens });
    const stream = new Writable({ write(chunk, _encoding, done) { logs.push(JSON.parse(String(chunk))); done(); } });
    app = await buildApp({ ...stack.deps, db, settings, authenticator }, { logger: { level: 'info', stream } });
  });
  afterAll(async () => {
    await app?.close();
    await db?.destroy();
    await relay?.close();
    await stack?.close();
  });

  // Authentication reads the API key's row, so this fails before the run path does anything.
  const run = () => app.inject({
    method: 'POST', url: `/api/released-app/${randomUUID()}/run`, headers: { authorization: `Bearer ${apiKey}` }, payload: { inputs: {} },
  });
  const webhook = () => app.inject({ method: 'POST', url: `/api/webhook-triggers/${randomUUID()}`, headers: { 'x-webhook-secret': 'wht_nope' }, payload: {} });
  const readyz = () => app.inject({ method: 'GET', url: '/readyz' });

  it('before the outage the same requests get their ordinary answers', async () => {
    expect((await run()).statusCode).toBeLessThan(500);
    expect([(await webhook()).statusCode, (await readyz()).statusCode]).toEqual([404, 200]);
  });

  it('during the outage', async () => {
    await relay.cut();
    logs.length = 0;

    const ran = await run();
    expect([ran.statusCode, ran.headers['retry-after']]).toEqual([503, '5']);
    expect(ran.json()).toEqual({ error: 'dependency_unavailable', message: 'PostgreSQL is unavailable; retry shortly', dependency: 'postgres' });

    const called = await webhook();
    expect([called.statusCode, called.headers['retry-after']]).toEqual([503, '5']);
    expect(called.json()).toEqual({ code: 'dependency_unavailable', message: 'PostgreSQL is unavailable; retry shortly', dependency: 'postgres' });

    // Readiness keeps its own 503 body, listing what failed (orchestrators read that, not the envelope).
    const ready = await readyz();
    expect(ready.statusCode).toBe(503);
    expect(ready.json()).toEqual({
      status: 'unavailable', checks: { postgres: expect.stringMatching(/^unreachable: connect ECONNREFUSED/), temporal: 'ok' }, failed: ['postgres'],
    });

    // Operations, not bugs: warnings naming PostgreSQL, nothing at error level.
    const notable = logs.filter((line) => line.level >= 40).map(({ level, msg, dependency }) => ({ level, msg, dependency }));
    expect(notable).toEqual([
      { level: 40, msg: 'dependency unavailable', dependency: 'postgres' },
      { level: 40, msg: 'dependency unavailable', dependency: 'postgres' },
    ]);
  });

  it('after the outage the pool reconnects and the answers are the ordinary ones again', async () => {
    await relay.restore();
    expect((await run()).statusCode).toBeLessThan(500);
    expect([(await webhook()).statusCode, (await readyz()).statusCode]).toEqual([404, 200]);
  });
});
