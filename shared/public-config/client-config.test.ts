import { describe, expect, it } from 'vitest';
import {
  ClientConfigView, presentGroup, renderClientConfig, requestOrigin, selectGroups, withOrigin,
  type ClientConfigGroup, type ClientConfigRow,
} from './client-config.js';

const rowsOf = (...rows: ClientConfigRow[]) => new Map(rows.map((row) => [row.group, row] as const));
const at = (iso: string) => new Date(iso);

describe('client config rules (spec §4.10 "Client-config details")', () => {
  it('selectGroups: whitelist order, unknown and repeated names dropped, absent or blank means all', () => {
    expect(selectGroups(undefined)).toEqual(['endpoints', 'models', 'thresholds', 'flags', 'transcribe', 'device1', 'firmware', 'board']);
    expect(selectGroups(' ')).toHaveLength(8);
    expect(selectGroups('models, endpoints,secret,models')).toEqual(['endpoints', 'models']);
    expect(selectGroups('secret,Flags')).toEqual([]);
  });

  it('requestOrigin: a plausible host[:port] on http or https, lower-cased; anything else null', () => {
    expect(requestOrigin('http', 'API.Example.com:8080')).toBe('http://api.example.com:8080');
    expect(requestOrigin('HTTPS', 'gw_1.internal')).toBe('https://gw_1.internal');
    expect(requestOrigin('http', '[::1]:3000')).toBe('http://[::1]:3000');
    expect(requestOrigin('http', '10.0.0.7')).toBe('http://10.0.0.7');
    for (const host of ['', 'evil.com/path', 'a b', 'user@host', 'host:99999', 'host:', '-bad.com', 'a..b', 'x'.repeat(64)]) {
      expect(requestOrigin('http', host), host).toBeNull();
    }
    expect(requestOrigin('ftp', 'example.com')).toBeNull();
    expect(requestOrigin(undefined, 'example.com')).toBeNull();
  });

  it('withOrigin keeps path, query and fragment verbatim; leaves what is neither absolute nor a path', () => {
    expect(withOrigin('https://old.example.com:444/v1/api?x=%2F#top', 'http://new.test')).toBe('http://new.test/v1/api?x=%2F#top');
    expect(withOrigin('https://old.example.com', 'http://new.test')).toBe('http://new.test');
    expect(withOrigin('//cdn.example.com/a', 'http://new.test')).toBe('http://new.test/a');
    expect(withOrigin('/v1', 'http://new.test')).toBe('http://new.test/v1');
    expect(withOrigin('not a url', 'http://new.test')).toBe('not a url');
  });

  it('presentGroup: model URLs forced to https at any depth of any group; endpoint origins swapped at the top of endpoints only', () => {
    const value = {
      modelBaseUrl: 'http://m.example.com/base', other: 'http://keep.example.com',
      nested: { modelManifestUrl: 'HTTP://m.example.com/manifest.json', list: [{ modelDownloadBaseUrl: 'http://d.example.com/' }] },
      modelDownloadBaseUrl: 42, apiBaseUrl: 'https://stored.example.com/api',
    };
    const models = presentGroup('models', value, 'http://host.test');
    expect(models).toEqual({
      ...value, modelBaseUrl: 'https://m.example.com/base',
      nested: { modelManifestUrl: 'https://m.example.com/manifest.json', list: [{ modelDownloadBaseUrl: 'https://d.example.com/' }] },
    });
    expect(value.modelBaseUrl).toBe('http://m.example.com/base');

    const endpoints = { apiBaseUrl: 'https://stored.example.com/api', oauthBaseUrl: 'https://stored.example.com/oauth', modelGatewayBaseUrl: 'https://gw.example.com/v1?k=1', cdn: 'https://cdn.example.com', deep: { apiBaseUrl: 'https://stored.example.com' } };
    expect(presentGroup('endpoints', endpoints, 'https://host.test:8443')).toEqual({
      ...endpoints, apiBaseUrl: 'https://host.test:8443/api', oauthBaseUrl: 'https://host.test:8443/oauth', modelGatewayBaseUrl: 'https://host.test:8443/v1?k=1',
    });
    expect(presentGroup('endpoints', endpoints, null)).toEqual(endpoints);
  });

  it('renderClientConfig: version and updatedAt of the newest included row, a strong ETag of the exact body', () => {
    const rows = rowsOf(
      { group: 'flags', value: { enableLocalAsr: true }, updatedAt: at('2026-01-02T03:04:05.678Z') },
      { group: 'models', value: { a: 1 }, updatedAt: at('2026-02-01T00:00:00.000Z') },
    );
    const flagsOnly = renderClientConfig(rows, ['flags'], null);
    expect(JSON.parse(flagsOnly.body)).toEqual({ version: Date.parse('2026-01-02T03:04:05.678Z'), updatedAt: '2026-01-02T03:04:05.678Z', groups: { flags: { enableLocalAsr: true } } });
    expect(flagsOnly.etag).toMatch(/^"[0-9a-f]{64}"$/);
    expect(renderClientConfig(rows, ['flags'], null)).toEqual(flagsOnly);
    expect(JSON.parse(renderClientConfig(rows, ['models', 'flags'], null).body).version).toBe(Date.parse('2026-02-01T00:00:00.000Z'));
    const none = renderClientConfig(rows, ['board'], null);
    expect(JSON.parse(none.body)).toEqual({ version: 0, updatedAt: null, groups: {} });
    expect(none.etag).not.toBe(flagsOnly.etag);
  });

});

describe('ClientConfigView', () => {
  function harness(initial: ClientConfigRow[]) {
    let rows = initial;
    let loads = 0;
    let fail = false;
    const listeners: Array<(key: string | undefined) => void> = [];
    const view = new ClientConfigView(async () => {
      loads++;
      // What the database had when the query ran: a change committed meanwhile is not in it.
      const snapshot = rows;
      await new Promise((r) => setTimeout(r, 5));
      if (fail) throw new Error('connection refused');
      return snapshot;
    }, (listener) => { listeners.push(listener); return () => listeners.splice(listeners.indexOf(listener), 1); }, 3);
    return {
      view, listeners,
      loads: () => loads,
      set(next: ClientConfigRow[]) { rows = next; },
      failing(value: boolean) { fail = value; },
      notify(key: string | undefined) { for (const listener of [...listeners]) listener(key); },
    };
  }
  const flags = (value: Record<string, unknown>, iso = '2026-01-01T00:00:00Z'): ClientConfigRow => ({ group: 'flags', value, updatedAt: at(iso) });
  const all: ClientConfigGroup[] = ['flags'];

  it('loads once for concurrent requests, then serves the memoized rendering', async () => {
    const h = harness([flags({ a: 1 })]);
    const [first, second] = await Promise.all([h.view.get(all, null), h.view.get(all, 'http://x.test')]);
    expect(h.loads()).toBe(1);
    expect(await h.view.get(all, null)).toBe(first);
    expect(second).not.toBe(first);
  });

  it('reloads after a client.* change or a reconnect (undefined), not after another key', async () => {
    const h = harness([flags({ a: 1 })]);
    const before = await h.view.get(all, null);
    h.set([flags({ a: 2 }, '2026-01-01T00:00:01Z')]);
    h.notify('billing.rules');
    expect(await h.view.get(all, null)).toBe(before);
    h.notify('client.flags');
    const after = await h.view.get(all, null);
    expect(JSON.parse(after.body).groups.flags).toEqual({ a: 2 });
    expect(after.etag).not.toBe(before.etag);
    h.set([flags({ a: 3 }, '2026-01-01T00:00:02Z')]);
    h.notify(undefined);
    expect(JSON.parse((await h.view.get(all, null)).body).groups.flags).toEqual({ a: 3 });
    expect(h.loads()).toBe(3);
  });

  it('does not keep a load that a change overtook', async () => {
    const h = harness([flags({ a: 1 })]);
    const stale = h.view.get(all, null);
    h.set([flags({ a: 2 })]);
    h.notify('client.flags');
    expect(JSON.parse((await stale).body).groups.flags).toEqual({ a: 1 });
    expect(JSON.parse((await h.view.get(all, null)).body).groups.flags).toEqual({ a: 2 });
  });

  it('does not cache a failed load, and keeps at most maxRendered views', async () => {
    const h = harness([flags({ a: 1 })]);
    h.failing(true);
    await expect(h.view.get(all, null)).rejects.toThrow('connection refused');
    h.failing(false);
    const first = await h.view.get(all, null);
    for (const host of ['a', 'b', 'c']) await h.view.get(all, `http://${host}.test`);
    expect(await h.view.get(all, null)).not.toBe(first);
    expect(h.loads()).toBe(2);
  });

  it('close stops following changes', () => {
    const h = harness([]);
    expect(h.listeners).toHaveLength(1);
    h.view.close();
    expect(h.listeners).toHaveLength(0);
  });
});
