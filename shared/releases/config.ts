import { z } from 'zod';
import type { RateLimit } from '../rate-limit/rate-limiter.js';

/** Spec §4.1 / §8.2 bounds of a release's own `rateLimit`. */
export const releaseRateLimitSchema = z.object({
  windowSeconds: z.number().int().min(1).max(3600),
  maxRequests: z.number().int().min(1).max(100_000),
});
export type ReleaseRateLimit = z.infer<typeof releaseRateLimitSchema>;

/**
 * What a release's config may hold, as the management API accepts it. `requireAuth` defaults to
 * true; `rateLimit` omitted means the global default.
 */
export const releaseConfigSchema = z.object({
  requireAuth: z.boolean().default(true).describe('false lets anonymous callers run public deployments, paid by the release key'),
  rateLimit: releaseRateLimitSchema.optional().describe('windowSeconds 1..3600, maxRequests 1..100000; default 60 per 60 s'),
});
export type ReleaseConfig = z.infer<typeof releaseConfigSchema>;

/** Applies when a release has no valid `rateLimit` of its own (docs/releases.md). */
export const GLOBAL_RELEASE_RATE_LIMIT: ReleaseRateLimit = { windowSeconds: 60, maxRequests: 60 };

export interface EffectiveReleaseConfig {
  requireAuth: boolean;
  rateLimit: ReleaseRateLimit;
  /** False when the stored rateLimit was missing or invalid and the global default applies. */
  ownRateLimit: boolean;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Reads a stored config fail-closed (spec §4.1 rule 1): auth is off only for a literal
 * `requireAuth: false` in an object; a missing, damaged or unparseable config requires auth. The
 * rate limit is taken only when it validates as a whole, otherwise the global default applies,
 * never "no limit" (and never a half-valid mix such as a valid window with a huge count).
 */
export function effectiveReleaseConfig(stored: unknown): EffectiveReleaseConfig {
  const config = isRecord(stored) ? stored : {};
  const rateLimit = releaseRateLimitSchema.safeParse(config.rateLimit);
  return {
    requireAuth: config.requireAuth !== false,
    rateLimit: rateLimit.success ? rateLimit.data : GLOBAL_RELEASE_RATE_LIMIT,
    ownRateLimit: rateLimit.success,
  };
}

export const asRateLimit = (limit: ReleaseRateLimit): RateLimit => ({ points: limit.maxRequests, windowSeconds: limit.windowSeconds });
