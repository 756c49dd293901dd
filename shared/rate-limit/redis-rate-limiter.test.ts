import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis } from '../../test/harness/redis.js';
import { createRedisRateLimiter } from './rate-limiter.js';

describe('Redis rate limiter', () => {
  let redis: Awaited<ReturnType<typeof startRedis>>;
  beforeAll(async () => { redis = await startRedis(); });
  afterAll(() => redis?.stop());

  it('two limiters on one Redis share the count of a key', async () => {
    const [a, b] = [createRedisRateLimiter(redis.url), createRedisRateLimiter(redis.url)];
    await Promise.all([a.ready(), b.ready()]);
    try {
      const limit = { points: 3, windowSeconds: 60 };
      const decisions = [];
      for (let i = 0; i < 6; i++) decisions.push(await (i % 2 === 0 ? a : b).consume('shared', limit));
      expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, false, false]);
      expect(decisions[3]!.retryAfterSeconds).toBeGreaterThanOrEqual(1);
      expect(decisions[3]!.retryAfterSeconds).toBeLessThanOrEqual(60);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('while Redis is unreachable it answers at once from the in-process count (never hangs, never unlimited)', async () => {
    const closedPort = (await startRedis());
    await closedPort.stop();
    const limiter = createRedisRateLimiter(closedPort.url);
    try {
      const started = performance.now();
      const limit = { points: 2, windowSeconds: 60 };
      const allowed = [];
      for (let i = 0; i < 3; i++) allowed.push((await limiter.consume('k', limit)).allowed);
      expect(allowed).toEqual([true, true, false]);
      expect(performance.now() - started).toBeLessThan(1000);
    } finally {
      await limiter.close();
    }
  });
});
