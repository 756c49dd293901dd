import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { hardwareFixtures, type HardwareFixtures } from './fixtures.js';

// The public shop's own cross-origin policy (spec §4.8: GET, POST and OPTIONS, from any origin,
// on /public/hardware-sales only) and the SKU configuration's per-IP budget (§7.5: 429).
describe('hardware sales: the public prefix\'s policy', () => {
  let stack: TestStack;
  let hw: HardwareFixtures;

  beforeAll(async () => {
    stack = await createTestStack();
    hw = hardwareFixtures(stack);
    await hw.relaxRateLimits();
  });
  afterAll(() => stack?.close());

  it('answers a browser\'s preflight for the shop, and only for the shop', async () => {
    const preflight = await stack.app.inject({
      method: 'OPTIONS', url: '/public/hardware-sales/orders',
      headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,authorization' },
    });
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('*');
    expect(String(preflight.headers['access-control-allow-methods']).split(',').map((m) => m.trim())).toEqual(['GET', 'POST', 'OPTIONS']);
    expect(String(preflight.headers['access-control-allow-headers']).split(',').map((h) => h.trim())).toEqual(['content-type', 'authorization']);

    const sku = await hw.sku();
    const config = await stack.app.inject({ method: 'GET', url: `/public/hardware-sales/skus/${sku.sku}/config`, headers: { origin: 'https://shop.example' } });
    expect(config.statusCode).toBe(200);
    expect(config.headers['access-control-allow-origin']).toBe('*');

    // Elsewhere no cross-origin grant: the buyer's logged-in endpoints and the rest of the API.
    for (const url of ['/hardware-sales/orders/HWO00000000000000000000/receipt', '/my']) {
      const other = await stack.app.inject({ method: 'OPTIONS', url, headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST' } });
      expect(other.headers['access-control-allow-origin']).toBeUndefined();
    }
  });

  it('limits the SKU configuration per IP: 429 RATE_LIMITED with Retry-After', async () => {
    const sku = await hw.sku();
    await hw.withRateLimits({ configPerMinute: 2 }, async () => {
      expect((await hw.getConfig(sku.sku, { ip: '10.9.8.7' })).statusCode).toBe(200);
      expect((await hw.getConfig(sku.sku, { ip: '10.9.8.7' })).statusCode).toBe(200);
      const limited = await hw.getConfig(sku.sku, { ip: '10.9.8.7' });
      expect(limited.statusCode).toBe(429);
      expect(limited.json()).toEqual({ success: false, error: { code: 'RATE_LIMITED', message: expect.any(String) } });
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      expect(limited.headers['x-ratelimit-limit']).toBe('2');
      expect((await hw.getConfig(sku.sku, { ip: '10.9.8.6' })).statusCode).toBe(200);
    });
  });
});
