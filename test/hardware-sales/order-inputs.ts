import type { HwAddress } from '../../shared/db/types.js';

/** A valid delivery address; fields can be overridden. */
export const testAddress = (overrides: Partial<HwAddress> = {}): HwAddress => ({
  receiverName: 'Zhang San', receiverPhone: '+8613800000000', province: 'Zhejiang', city: 'Hangzhou', district: 'Xihu',
  addressLine: 'No. 1 Example Road', postalCode: '310000', ...overrides,
});

/** Rate limits high enough that a file's own calls never meet them (tests of 429 lower them again). */
export const generousRateLimits = { quotePerMinute: 100_000, configPerMinute: 100_000, orderPerMinute: 100_000, payPerMinute: 100_000, lookupPerMinute: 100_000 };
