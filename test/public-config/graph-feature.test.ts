import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../harness/cli.js';
import { withSetting } from '../harness/settings.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { until } from '../harness/until.js';

/** Tests that start the CLI as a process: each start takes seconds on a loaded machine. */
const CLI_TIMEOUT_MS = 120_000;

describe('GET /public/features/graph (spec §4.10, CONTRACTS.md "Public configuration")', () => {
  let stack: TestStack;
  const get = () => stack.app.inject({ method: 'GET', url: '/public/features/graph', headers: { origin: 'https://app.example.com' } });

  beforeAll(async () => {
    stack = await createTestStack();
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('is closed with no label by default, uncached, for any origin', async () => {
    const response = await get();
    expect(response.statusCode).toBe(200);
    expect(response.headers['access-control-allow-origin']).toBe('*');
    expect(response.headers['cache-control']).toBe('no-cache');
    expect(response.json()).toEqual({ success: true, data: { open: false, label: null } });
  });

  it('follows `settings set graph.public` within 2 s and never shows the other keys stored in that setting', async () => {
    const value = { open: true, label: 'Graph (beta)', providerKey: 'sk-live-graph-secret', model: 'gpt-graph', billing: { apiKey: 'bill-secret' } };
    const set = await runCli(['settings', 'set', '--key', 'graph.public', '--value', JSON.stringify(value)], stack.env);
    expect(set.code, set.stderr).toBe(0);
    const started = Date.now();
    const response = await until(async () => {
      const answer = await get();
      return answer.json().data.open === true && answer;
    }, 2_000, 'graph.public to open');
    const elapsedMs = Date.now() - started;
    expect(elapsedMs).toBeLessThan(2_000);
    expect(response.json()).toEqual({ success: true, data: { open: true, label: 'Graph (beta)' } });
    expect(response.body).not.toMatch(/secret|gpt-graph|providerKey|billing/);
  }, CLI_TIMEOUT_MS);

  it('fills a partial value from the defaults and answers the defaults for an invalid one', async () => {
    await withSetting(stack, 'graph.public', { open: true }, async () => {
      expect((await get()).json()).toEqual({ success: true, data: { open: true, label: null } });
    });
    await withSetting(stack, 'graph.public', { open: 'yes', label: 'Leaky', providerKey: 'sk-x' }, async () => {
      const response = await get();
      expect(response.json()).toEqual({ success: true, data: { open: false, label: null } });
    });
  });
});
