import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';

/** A budget: `points` calls per fixed window of `windowSeconds`. */
export interface RateLimit { points: number; windowSeconds: number }

export interface RateLimitDecision {
  allowed: boolean;
  /** Whole seconds until the key's window resets (at least 1): the `Retry-After` value. */
  retryAfterSeconds: number;
  /** Calls left in the current window after this one. */
  remaining: number;
}

/**
 * Per-key call budgets. The limit is passed on every call rather than fixed at construction, so a
 * changed setting (or a release's own config) applies at once; each distinct limit has its own
 * key space, so changing it starts a fresh count.
 */
export interface RateLimiter {
  consume(key: string, limit: RateLimit): Promise<RateLimitDecision>;
  /** Releases the store's connection (Redis); a no-op in memory. */
  close(): Promise<void>;
}

const prefixOf = ({ points, windowSeconds }: RateLimit) => `rl:${points}/${windowSeconds}s`;

/** The shared consume/decision logic over a `rate-limiter-flexible` limiter per distinct limit. */
function limiterOver(make: (limit: RateLimit) => RateLimiterAbstract, close: () => Promise<void>): RateLimiter {
  const limiters = new Map<string, RateLimiterAbstract>();
  const limiterFor = (limit: RateLimit) => {
    const prefix = prefixOf(limit);
    let limiter = limiters.get(prefix);
    if (!limiter) {
      limiter = make(limit);
      limiters.set(prefix, limiter);
    }
    return limiter;
  };
  const decision = (allowed: boolean, res: RateLimiterRes): RateLimitDecision => ({
    allowed, retryAfterSeconds: Math.max(1, Math.ceil(res.msBeforeNext / 1000)), remaining: Math.max(0, res.remainingPoints),
  });
  return {
    async consume(key, limit) {
      try {
        return decision(true, await limiterFor(limit).consume(key));
      } catch (rejection) {
        // The limiter rejects with a RateLimiterRes when the budget is spent, with an Error on store failure.
        if (rejection instanceof RateLimiterRes) return decision(false, rejection);
        throw rejection;
      }
    },
    close,
  };
}

const memoryLimiter = (limit: RateLimit) =>
  new RateLimiterMemory({ points: limit.points, duration: limit.windowSeconds, keyPrefix: prefixOf(limit) });

/** Counts per process: one API instance, tests, and the fallback while Redis is unreachable. */
export function createMemoryRateLimiter(): RateLimiter {
  return limiterOver(memoryLimiter, async () => {});
}

/** How long one Redis command may take before the call falls back to the in-process count. */
const REDIS_COMMAND_TIMEOUT_MS = 500;

/**
 * Counts in Redis, so every API process shares one budget per key. Never hangs a request and
 * never fails it: while Redis is unreachable (not connected, or a command over 500 ms) each
 * process counts in memory instead (`insuranceLimiter`), so the limit still holds per process
 * rather than failing open to no limit or closed to an outage (docs/decisions.md "Releases").
 */
export function createRedisRateLimiter(redisUrl: string, onError: (error: Error) => void = () => {}): RateLimiter & { ready(): Promise<void> } {
  // No offline queue: a command while disconnected fails at once instead of waiting for a reconnect.
  const redis = new Redis(redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: REDIS_COMMAND_TIMEOUT_MS });
  redis.on('error', onError);
  const limiter = limiterOver((limit) => new RateLimiterRedis({
    storeClient: redis, points: limit.points, duration: limit.windowSeconds, keyPrefix: prefixOf(limit),
    rejectIfRedisNotReady: true, insuranceLimiter: memoryLimiter(limit),
  }), async () => {
    await redis.quit().catch(() => redis.disconnect());
  });
  return {
    ...limiter,
    ready: () => (redis.status === 'ready' ? Promise.resolve() : new Promise((resolve) => redis.once('ready', () => resolve()))),
  };
}

/** The process's limiter: shared through Redis when `REDIS_URL` is set, in memory otherwise. */
export function createRateLimiter(options: { redisUrl?: string; onError?: (error: Error) => void } = {}): RateLimiter {
  return options.redisUrl ? createRedisRateLimiter(options.redisUrl, options.onError) : createMemoryRateLimiter();
}
