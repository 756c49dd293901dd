import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';

export interface RateLimitDecision {
  allowed: boolean;
  /** Whole seconds until the key's window resets (at least 1): the `Retry-After` value. */
  retryAfterSeconds: number;
  /** Calls left in the current window after this one. */
  remaining: number;
}

/**
 * Per-key call budgets over a one-minute window. The limit is passed on every call rather than
 * fixed at construction, so a changed site setting applies at once. The in-memory store counts per
 * process; a Redis-backed implementation of the same interface makes the count shared.
 */
export interface RateLimiter {
  consume(key: string, perMinute: number): Promise<RateLimitDecision>;
}

const WINDOW_SECONDS = 60;

/** `rate-limiter-flexible` in memory, one limiter per distinct `perMinute` (each with its own key space). */
export function createMemoryRateLimiter(): RateLimiter {
  const limiters = new Map<number, RateLimiterMemory>();
  const limiterFor = (perMinute: number) => {
    let limiter = limiters.get(perMinute);
    if (!limiter) {
      limiter = new RateLimiterMemory({ points: perMinute, duration: WINDOW_SECONDS, keyPrefix: `per-minute-${perMinute}` });
      limiters.set(perMinute, limiter);
    }
    return limiter;
  };
  const decision = (allowed: boolean, res: RateLimiterRes): RateLimitDecision => ({
    allowed, retryAfterSeconds: Math.max(1, Math.ceil(res.msBeforeNext / 1000)), remaining: Math.max(0, res.remainingPoints),
  });
  return {
    async consume(key, perMinute) {
      try {
        return decision(true, await limiterFor(perMinute).consume(key));
      } catch (rejection) {
        // The limiter rejects with a RateLimiterRes when the budget is spent, with an Error on store failure.
        if (rejection instanceof RateLimiterRes) return decision(false, rejection);
        throw rejection;
      }
    },
  };
}

/** The process's limiter: in memory for now; `REDIS_URL` will select a shared store (a later issue). */
export function createRateLimiter(_options: { redisUrl?: string } = {}): RateLimiter {
  return createMemoryRateLimiter();
}
