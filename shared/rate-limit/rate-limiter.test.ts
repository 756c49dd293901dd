import { describe, expect, it } from 'vitest';
import { createMemoryRateLimiter } from './rate-limiter.js';

const perMinute = (points: number) => ({ points, windowSeconds: 60 });

describe('in-memory rate limiter', () => {
  it('allows perMinute calls per key, then refuses with the seconds until the window resets', async () => {
    const limiter = createMemoryRateLimiter();
    expect(await limiter.consume('a', perMinute(2))).toMatchObject({ allowed: true, remaining: 1 });
    expect(await limiter.consume('a', perMinute(2))).toMatchObject({ allowed: true, remaining: 0 });
    const refused = await limiter.consume('a', perMinute(2));
    expect(refused).toMatchObject({ allowed: false, remaining: 0 });
    expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(refused.retryAfterSeconds).toBeLessThanOrEqual(60);
    expect((await limiter.consume('b', perMinute(2))).allowed).toBe(true);
  });

  it('a different limit is a different budget, so a changed setting applies at once', async () => {
    const limiter = createMemoryRateLimiter();
    await limiter.consume('a', perMinute(1));
    expect((await limiter.consume('a', perMinute(1))).allowed).toBe(false);
    expect(await limiter.consume('a', perMinute(3))).toMatchObject({ allowed: true, remaining: 2 });
  });
});
