import { describe, expect, it } from 'vitest';
import { GLOBAL_RELEASE_RATE_LIMIT, effectiveReleaseConfig } from './config.js';

describe('effectiveReleaseConfig: stored release config, read fail-closed', () => {
  it.each([
    ['missing', undefined], ['null', null], ['a string', 'requireAuth=false'], ['an array', [{ requireAuth: false }]],
    ['requireAuth as a string', { requireAuth: 'false' }], ['requireAuth as 0', { requireAuth: 0 }], ['no requireAuth', {}],
  ])('%s config requires auth', (_label, stored) => {
    expect(effectiveReleaseConfig(stored).requireAuth).toBe(true);
  });

  it('only a literal requireAuth: false turns auth off', () => {
    expect(effectiveReleaseConfig({ requireAuth: false }).requireAuth).toBe(false);
  });

  it('takes a valid rateLimit as it is', () => {
    expect(effectiveReleaseConfig({ rateLimit: { windowSeconds: 3600, maxRequests: 100_000 } }))
      .toMatchObject({ rateLimit: { windowSeconds: 3600, maxRequests: 100_000 }, ownRateLimit: true });
  });

  it.each([
    ['windowSeconds 0', { windowSeconds: 0, maxRequests: 5 }],
    ['maxRequests 1e9', { windowSeconds: 60, maxRequests: 1e9 }],
    ['both out of range', { windowSeconds: 0, maxRequests: 1e9 }],
    ['windowSeconds over an hour', { windowSeconds: 3601, maxRequests: 5 }],
    ['fractional', { windowSeconds: 1.5, maxRequests: 5 }],
    ['negative', { windowSeconds: 60, maxRequests: -1 }],
    ['strings', { windowSeconds: '60', maxRequests: '5' }],
    ['half of it', { windowSeconds: 60 }],
    ['not an object', 'fast'],
  ])('an invalid rateLimit (%s) falls back to the global default, never to no limit', (_label, rateLimit) => {
    expect(effectiveReleaseConfig({ requireAuth: false, rateLimit })).toEqual({ requireAuth: false, rateLimit: GLOBAL_RELEASE_RATE_LIMIT, ownRateLimit: false });
  });
});
