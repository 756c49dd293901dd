import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateWebhookSecret, webhookSecretMatches } from './secrets.js';

describe('webhook secrets', () => {
  it('are wht_ + 32 random bytes base64url, stored as sha256 hex with an 8-character prefix', () => {
    const { secret, hash, prefix } = generateWebhookSecret();
    expect(secret).toMatch(/^wht_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(secret.slice(4), 'base64url')).toHaveLength(32);
    expect(hash).toBe(createHash('sha256').update(secret).digest('hex'));
    expect(prefix).toBe(secret.slice(0, 8));
    expect(generateWebhookSecret().secret).not.toBe(secret);
  });

  it('match only the secret whose hash is stored', () => {
    const { secret, hash } = generateWebhookSecret();
    expect(webhookSecretMatches(secret, hash)).toBe(true);
    expect(webhookSecretMatches(`${secret}x`, hash)).toBe(false);
    expect(webhookSecretMatches(hash, hash)).toBe(false);
    expect(webhookSecretMatches(undefined, hash)).toBe(false);
  });

  it('never match without a usable stored hash, whatever is presented', () => {
    const { secret } = generateWebhookSecret();
    for (const stored of [null, undefined, '', 'not-hex', createHash('sha256').update(secret).digest('hex').toUpperCase()]) {
      expect(webhookSecretMatches(secret, stored)).toBe(false);
    }
    // A secret without the prefix is refused even when its hash is stored.
    expect(webhookSecretMatches('', createHash('sha256').update('').digest('hex'))).toBe(false);
  });
});
