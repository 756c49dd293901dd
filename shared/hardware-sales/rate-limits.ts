import { sha256Hex } from '../crypto.js';
import { AppError } from '../errors.js';
import type { RateLimit, RateLimiter } from '../rate-limit/rate-limiter.js';

// The hardware endpoints' budgets (spec §8.2, setting `hardware_sales.rate_limits`): each endpoint
// has its own buckets (a quote never spends an order's budget), keyed by IP, by phone or user when
// known, and by a hash of the discount code (so code guessing is slowed whoever guesses).

export interface RateCheck {
  /** e.g. `hw:quote:ip:1.2.3.4`; build it with `bucketKey`. */
  key: string;
  limit: RateLimit;
}

/** A bucket key; values that are secrets or personal (codes, phones) are hashed into it. */
export function bucketKey(endpoint: string, dimension: 'ip' | 'user' | 'phone' | 'code', value: string): string {
  const shown = dimension === 'ip' || dimension === 'user' ? value : sha256Hex(value.toUpperCase()).slice(0, 32);
  return `hw:${endpoint}:${dimension}:${shown}`;
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
