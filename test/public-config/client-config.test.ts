import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../api/app.js';
import { clientConfigCommands } from '../../scripts/cli/client-config-commands.js';
import { CliError, parseFlags } from '../../scripts/cli/flags.js';
import { setClientConfig, type ClientConfigGroup } from '../../shared/public-config/client-config.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { runCli } from '../harness/cli.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { until } from '../harness/until.js';

const CLI_TIMEOUT_MS = 120_000;
const URL_PATH = '/public/client-config';

const stored = {
  endpoints: {
    apiBaseUrl: 'https://api.stored.example/v1', oauthBaseUrl: 'https://api.stored.example/oauth?prompt=login',
    modelGatewayBaseUrl: 'https://gw.stored.example/gateway/', docsUrl: 'https://docs.stored.example/',
  },
  models: {
    modelManifestUrl: 'http://models.example.com/manifest.json', modelBaseUrl: 'http://models.example.com/base/',
    modelDownloadBaseUrl: 'https://dl.example.com/', asr: { modelBaseUrl: 'http://models.example.com/asr/' }, mirror: 'http://mirror.example.com/',
  },
  flags: { enableLocalAsr: true, enableModelDownload: false, enableTabAiFriends: true },
};
const shownModels = {
  ...stored.models, modelManifestUrl: 'https://models.example.com/manifest.json', modelBaseUrl: 'https://models.example.com/base/',
  asr: { modelBaseUrl: 'https://models.example.com/asr/' },
};
const endpointsOn = (origin: string) => ({
  ...stored.endpoints, apiBaseUrl: `${origin}/v1`, oauthBaseUrl: `${origin}/oauth?prompt=login`, modelGatewayBaseUrl: `${origin}/gateway/`,
});

describe('GET /public/client-config (spec §4.10, §2.16; CONTRACTS.md "Public configuration")', () => {
  let stack: TestStack;
  /** The update time (ms) of each group's row, as stored. */
  const versions: Partial<Record<ClientConfigGroup, number>> = {};

  const get = (query = '', headers: Record<string, string> = {}, remoteAddress?: string) =>
    stack.app.inject({ method: 'GET', url: `${URL_PATH}${query}`, headers: { host: 'config.test:8080', ...headers }, remoteAddress });
  /** Writes a group as the CLI would and drops the view now (the NOTIFY would do it moments later). */
  async function setGroup(group: ClientConfigGroup, value: Record<string, unknown>) {
    versions[group] = (await setClientConfig(stack.db, group, value)).version;
    stack.deps.settings.invalidate(`client.${group}`);
  }
  async function setOther(key: string, value: unknown) {
    await upsertSiteSetting(stack.db, key, value);
    stack.deps.settings.invalidate(key);
  }
  const newest = (...groups: ClientConfigGroup[]) => Math.max(...groups.map((group) => versions[group]!));

  beforeAll(async () => {
    stack = await createTestStack();
  });
  afterAll(async () => {
    await stack?.close();
  });
  beforeEach(async () => {
    await stack.db.deleteFrom('site_settings').where('key', 'like', 'client.%').execute();
    for (const group of ['endpoints', 'models', 'flags'] as const) await setGroup(group, stored[group]);
    // Not whitelisted, or not client config at all: never served.
    await setOther('client.secret', { apiSecret: 'sk-must-not-leak' });
    await setOther('billing.rules', { runBaseMilli: 11 });
  });

  it('serves every whitelisted group by default: endpoint origins from Host, model URLs on https, caching headers', async () => {
    const response = await get();
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    const version = newest('endpoints', 'models', 'flags');
    expect(response.json()).toEqual({
      version, updatedAt: new Date(version).toISOString(),
      groups: { endpoints: endpointsOn('http://config.test:8080'), models: shownModels, flags: stored.flags },
    });
    expect(response.headers['etag']).toBe(`"${createHash('sha256').update(response.payload).digest('hex')}"`);
    expect(response.headers['cache-control']).toBe('no-cache');
    expect(response.headers['vary']).toBe('Host, X-Forwarded-Host, X-Forwarded-Proto');
    expect(response.payload).not.toMatch(/secret|sk-must-not-leak|runBaseMilli|billing/);
  });

  it('?groups= picks groups (unknown ones ignored); only unknown ones give version 0 and no groups', async () => {
    const two = await get('?groups=models,endpoints');
    expect(two.statusCode).toBe(200);
    expect(Object.keys(two.json().groups)).toEqual(['endpoints', 'models']);
    expect(two.json().version).toBe(newest('endpoints', 'models'));

    const withUnknown = await get('?groups=flags,secret,billing,nope&platform=ios&appVersion=2.3.4');
    expect(withUnknown.json()).toEqual({ version: versions.flags, updatedAt: new Date(versions.flags!).toISOString(), groups: { flags: stored.flags } });

    for (const query of ['?groups=secret,billing.rules', '?groups=nope', '?groups=thresholds']) {
      const none = await get(query);
      expect(none.statusCode, query).toBe(200);
      expect(none.json(), query).toEqual({ version: 0, updatedAt: null, groups: {} });
    }
  });

  it('version follows the newest included row: an excluded or internal row changing leaves the view and its ETag alone', async () => {
    const before = await get('?groups=flags');
    await setGroup('models', { modelBaseUrl: 'https://other.example.com/' });
    await setOther('client.secret', { apiSecret: 'rotated' });
    const unchanged = await get('?groups=flags');
    expect(unchanged.payload).toBe(before.payload);
    expect(unchanged.headers['etag']).toBe(before.headers['etag']);

    await setGroup('flags', { ...stored.flags, enableLocalAsr: false });
    const changed = await get('?groups=flags');
    expect(changed.json()).toMatchObject({ version: versions.flags, groups: { flags: { enableLocalAsr: false } } });
    expect(versions.flags).toBeGreaterThan(before.json().version);
    expect(changed.headers['etag']).not.toBe(before.headers['etag']);
  });

  it('the ETag is strong and stable; If-None-Match (weak comparison, lists, *) gives 304 with no body, a mismatch 200', async () => {
    const first = await get();
    const etag = first.headers['etag'] as string;
    expect(etag).toMatch(/^"[0-9a-f]{64}"$/);
    expect((await get()).headers['etag']).toBe(etag);
    expect((await get('?groups=flags')).headers['etag']).not.toBe(etag);

    for (const ifNoneMatch of [etag, `W/${etag}`, `"stale", ${etag}`, '*']) {
      const notModified = await get('', { 'if-none-match': ifNoneMatch });
      expect(notModified.statusCode, ifNoneMatch).toBe(304);
      expect(notModified.payload).toBe('');
      expect(notModified.headers).toMatchObject({ etag, 'cache-control': 'no-cache', vary: 'Host, X-Forwarded-Host, X-Forwarded-Proto' });
    }
    const mismatch = await get('', { 'if-none-match': '"stale"' });
    expect(mismatch.statusCode).toBe(200);
    expect(mismatch.payload).toBe(first.payload);
    // The same tag for another host's view does not match: the endpoint origins differ.
    expect((await get('', { host: 'other.test', 'if-none-match': etag })).statusCode).toBe(200);
  });

  it('client-config set (the CLI) writes client.<group> and shows within 2 s with a new ETag; bad groups and values change nothing', async () => {
    const before = await get('?groups=flags');
    const value = { enableLocalAsr: false, enableModelDownload: true, rollout: { percent: 25 } };
    const set = await runCli(['client-config', 'set', '--group', 'flags', '--value', JSON.stringify(value)], stack.env);
    expect(set.code, set.stderr).toBe(0);
    expect(set.json).toEqual({ group: 'flags', version: expect.any(Number) });
    const row = await stack.db.selectFrom('site_settings').select(['value', 'updated_at']).where('key', '=', 'client.flags').executeTakeFirstOrThrow();
    expect(row.value).toEqual(value);
    expect(row.updated_at.getTime()).toBe(set.json!.version);

    // No invalidate() here: the table's NOTIFY alone must reach the running API.
    const started = Date.now();
    const fresh = await until(async () => {
      const response = await get('?groups=flags', { 'if-none-match': before.headers['etag'] as string });
      return response.statusCode === 200 ? response : null;
    }, 2_000, 'the new client config');
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(fresh.json()).toEqual({ version: set.json!.version, updatedAt: new Date(set.json!.version as number).toISOString(), groups: { flags: value } });
    expect(fresh.headers['etag']).not.toBe(before.headers['etag']);

    const command = clientConfigCommands['client-config set']!;
    const ctx = { config: stack.config, db: () => stack.db, temporalAddress: () => '', warn: () => {} };
    const refusals: Array<[string[], string]> = [
      [['--group', 'secret', '--value', '{"a":1}'], '--group'],
      [['--group', 'client.flags', '--value', '{"a":1}'], '--group'],
      [['--group', 'flags', '--value', '[1,2]'], '--value'],
      [['--group', 'flags', '--value', 'null'], '--value'],
      [['--group', 'flags', '--value', '{not json'], '--value'],
    ];
    for (const [args, flag] of refusals) {
      const refused = await command(parseFlags(args), ctx).then(() => null, (error: unknown) => error);
      expect(refused, args.join(' ')).toBeInstanceOf(CliError);
      expect(refused, args.join(' ')).toMatchObject({ code: 'invalid_flag', message: expect.stringContaining(flag) });
    }
    const keys = await stack.db.selectFrom('site_settings').select('key').where('key', 'like', 'client.%').orderBy('key').execute();
    expect(keys.map((k) => k.key)).toEqual(['client.endpoints', 'client.flags', 'client.models', 'client.secret']);
    expect((await stack.db.selectFrom('site_settings').select('value').where('key', '=', 'client.flags').executeTakeFirstOrThrow()).value).toEqual(value);
  }, CLI_TIMEOUT_MS);

  it('a trusted proxy\'s X-Forwarded-Host/-Proto shape the endpoint origins; an untrusted peer\'s do not; a malformed host keeps the stored URLs', async () => {
    const forwarded = { host: 'internal:3000', 'x-forwarded-host': 'app.example.com', 'x-forwarded-proto': 'https' };
    const endpoints = async (response: Awaited<ReturnType<typeof get>>) => response.json().groups.endpoints;
    // TRUST_PROXY defaults to loopback: inject's peer is 127.0.0.1.
    expect(await endpoints(await get('?groups=endpoints', forwarded))).toEqual(endpointsOn('https://app.example.com'));
    expect(await endpoints(await get('?groups=endpoints', { ...forwarded, 'x-forwarded-host': 'a.example, App.Example.com:8443' })))
      .toEqual(endpointsOn('https://app.example.com:8443'));
    expect(await endpoints(await get('?groups=endpoints', forwarded, '203.0.113.9'))).toEqual(endpointsOn('http://internal:3000'));
    expect(await endpoints(await get('?groups=endpoints', { host: '[::1]:3000' }))).toEqual(endpointsOn('http://[::1]:3000'));
    expect(await endpoints(await get('?groups=endpoints', { ...forwarded, 'x-forwarded-host': 'evil.example/path?' }))).toEqual(stored.endpoints);

    // TRUST_PROXY as a CIDR: only peers inside it are believed; loopback no longer is.
    const cidrApp = await buildApp({ ...stack.deps, config: { ...stack.config, TRUST_PROXY: '10.0.0.0/8' } }, { logger: false });
    try {
      const at = (remoteAddress: string) => cidrApp.inject({ method: 'GET', url: `${URL_PATH}?groups=endpoints`, headers: forwarded, remoteAddress });
      expect((await at('10.1.2.3')).json().groups.endpoints).toEqual(endpointsOn('https://app.example.com'));
      expect((await at('127.0.0.1')).json().groups.endpoints).toEqual(endpointsOn('http://internal:3000'));
    } finally {
      await cidrApp.close();
    }
  });

  it('answers any origin (CORS), exposing the ETag, on 200 and on 304', async () => {
    const response = await get('', { origin: 'https://web.example.org' });
    expect(response.headers['access-control-allow-origin']).toBe('*');
    expect(String(response.headers['access-control-expose-headers'])).toMatch(/\betag\b/);
    const notModified = await get('', { origin: 'https://web.example.org', 'if-none-match': response.headers['etag'] as string });
    expect(notModified.statusCode).toBe(304);
    expect(notModified.headers['access-control-allow-origin']).toBe('*');
    const preflight = await stack.app.inject({
      method: 'OPTIONS', url: URL_PATH,
      headers: { origin: 'https://web.example.org', 'access-control-request-method': 'GET', 'access-control-request-headers': 'if-none-match' },
    });
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers['access-control-allow-headers']).toMatch(/if-none-match/);
  });

  it('is documented in the OpenAPI document, 304 included', async () => {
    const doc = (await stack.app.inject({ method: 'GET', url: '/docs/json' })).json();
    const operation = doc.paths['/public/client-config'].get;
    expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['200', '304', '500', '503']));
    expect(operation.parameters.map((p: { name: string }) => p.name)).toEqual(['groups', 'platform', 'appVersion']);
  });

  it('a database failure is 500 INTERNAL_ERROR in the public envelope, and the next good read recovers', async () => {
    stack.deps.settings.invalidate('client.flags');
    await sql`ALTER TABLE site_settings RENAME TO site_settings_away`.execute(stack.db);
    let failed: Awaited<ReturnType<typeof get>>;
    try {
      failed = await get();
    } finally {
      await sql`ALTER TABLE site_settings_away RENAME TO site_settings`.execute(stack.db);
    }
    expect(failed.statusCode).toBe(500);
    expect(failed.json()).toEqual({ success: false, error: { code: 'INTERNAL_ERROR', message: 'Internal server error' } });
    expect(failed.payload).not.toMatch(/site_settings/);
    // A failed load is not kept.
    expect((await get('?groups=flags')).json().groups).toEqual({ flags: stored.flags });
  });
});
