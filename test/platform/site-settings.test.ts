import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SiteSettingsCache } from '../../shared/site-settings/cache.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { runCli } from '../harness/cli.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

async function eventually<T>(read: () => Promise<T>, accept: (value: T) => boolean, withinMs: number): Promise<{ value: T; ms: number }> {
  const started = Date.now();
  for (;;) {
    const value = await read();
    if (accept(value)) return { value, ms: Date.now() - started };
    if (Date.now() - started > withinMs) throw new Error(`not within ${withinMs} ms; last value ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('site settings read through a cache, invalidated by NOTIFY', () => {
  let stack: TestStack;
  beforeAll(async () => { stack = await createTestStack(); });
  afterAll(() => stack?.close());

  it('gives the documented defaults when nothing is stored', async () => {
    expect(await stack.deps.settings.get('run.input_limit')).toEqual({
      maxBodyBytes: 4_194_304, maxFieldBytes: 1_048_576, maxInlineBase64Bytes: 1_048_576,
      maxTextBytes: 1_048_576, maxTextTokens: 200_000, maxDepth: 32, maxNodes: 100_000,
    });
    expect(await stack.deps.settings.get('run.max_timeout_seconds')).toBe(300);
  });

  it('`settings set` reaches a running reader within 2 seconds, although its cache lives 5 minutes', async () => {
    const settings = stack.deps.settings;
    expect((await settings.get('webhook_trigger.rate_limit')).perMinute).toBe(60); // now cached
    const cli = await runCli(['settings', 'set', '--key', 'webhook_trigger.rate_limit', '--value', '{"perMinute": 5}'], stack.env);
    expect(cli.code).toBe(0);
    const { ms } = await eventually(() => settings.get('webhook_trigger.rate_limit'), (v) => v.perMinute === 5, 2_000);
    expect(ms).toBeLessThan(2_000);
  });

  it('serves from memory until told otherwise (no query per read)', async () => {
    const isolated = new SiteSettingsCache(stack.db); // not listening: only the TTL can refresh it
    await upsertSiteSetting(stack.db, 'run.max_timeout_seconds', 60);
    expect(await isolated.get('run.max_timeout_seconds')).toBe(60);
    await stack.db.updateTable('site_settings').set({ value: JSON.stringify(90) }).where('key', '=', 'run.max_timeout_seconds').execute();
    expect(await isolated.get('run.max_timeout_seconds')).toBe(60);
    isolated.invalidate('run.max_timeout_seconds');
    expect(await isolated.get('run.max_timeout_seconds')).toBe(90);
  });

  it('merges a partial object over the defaults, and falls back to defaults (never "no limit") on an invalid value', async () => {
    const reasons: string[] = [];
    const reader = new SiteSettingsCache(stack.db, { onInvalid: (key, reason) => reasons.push(`${key}: ${reason}`) });
    await upsertSiteSetting(stack.db, 'run.input_limit', { maxDepth: 8 });
    expect(await reader.get('run.input_limit')).toMatchObject({ maxDepth: 8, maxNodes: 100_000 });
    reader.invalidate();
    await upsertSiteSetting(stack.db, 'run.input_limit', { maxDepth: -1 });
    expect((await reader.get('run.input_limit')).maxDepth).toBe(32);
    expect(reasons).toEqual([expect.stringMatching(/^run\.input_limit: maxDepth: /)]);
  });

  it('a direct SQL write (psql) also invalidates, through the table trigger', async () => {
    const settings = stack.deps.settings;
    await upsertSiteSetting(stack.db, 'http_block.allow_hosts', ['127.0.0.1']);
    await eventually(() => settings.get('http_block.allow_hosts'), (v) => v.length === 1, 2_000);
    await stack.db.deleteFrom('site_settings').where('key', '=', 'http_block.allow_hosts').execute();
    await eventually(() => settings.get('http_block.allow_hosts'), (v) => v.length === 0, 2_000);
  });
});
