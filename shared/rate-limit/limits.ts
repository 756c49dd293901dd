import { AppError } from '../errors.js';
import type { RateLimit, RateLimiter } from './rate-limiter.js';

// Spending calls from several budgets at once, for any route (hardware sales, the JS-SDK signature,
// connection tests): the first empty budget answers 429 with Retry-After and X-RateLimit-*.

export interface RateCheck {
  /** e.g. `hw:quote:ip:1.2.3.4`. */
  key: string;
  limit: RateLimit;
}

export const perMinute = (points: number): RateLimit => ({ points, windowSeconds: 60 });

/**
 * Spends one call from every bucket; the first one empty answers 429 `RATE_LIMITED` with
 * `Retry-After` and `X-RateLimit-*` (spec §5.4, quote rule 8).
 */
export async function assertWithinLimits(limiter: RateLimiter, checks: readonly RateCheck[], message = 'Too many requests; retry later'): Promise<void> {
  for (const check of checks) {
    const decision = await limiter.consume(check.key, check.limit);
    if (!decision.allowed) {
      throw new AppError(429, 'RATE_LIMITED', message, {}, {
        'retry-after': String(decision.retryAfterSeconds),
        'x-ratelimit-limit': String(check.limit.points),
        'x-ratelimit-remaining': '0',
        'x-ratelimit-reset': String(decision.retryAfterSeconds),
      });
    }
  }
}
