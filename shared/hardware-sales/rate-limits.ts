import { sha256Hex } from '../crypto.js';

// The hardware endpoints' budgets (spec §8.2, setting `hardware_sales.rate_limits`): each endpoint
// has its own buckets (a quote never spends an order's budget), keyed by IP, by phone or user when
// known, and by a hash of the discount code (so code guessing is slowed whoever guesses).

/** A bucket key; values that are secrets or personal (codes, phones) are hashed into it. */
export function bucketKey(endpoint: string, dimension: 'ip' | 'user' | 'phone' | 'code', value: string): string {
  const shown = dimension === 'ip' || dimension === 'user' ? value : sha256Hex(value.toUpperCase()).slice(0, 32);
  return `hw:${endpoint}:${dimension}:${shown}`;
}
