import { describe, expect, it } from 'vitest';
import { generateToken, hasValidTokenShape, tokenPrefixes } from './tokens.js';

describe('token format', () => {
  it.each(Object.keys(tokenPrefixes) as Array<keyof typeof tokenPrefixes>)('%s: prefix, 32 random bytes, CRC32 checksum', (kind) => {
    const token = generateToken(kind);
    expect(token.startsWith(tokenPrefixes[kind])).toBe(true);
    expect(token).toHaveLength(tokenPrefixes[kind].length + 43 + 6);
    expect(hasValidTokenShape(kind, token)).toBe(true);
    expect(generateToken(kind)).not.toBe(token);
  });

  it('rejects a changed character, a wrong prefix, and a wrong length before any lookup', () => {
    const token = generateToken('apiKey');
    const flipped = token.slice(0, 10) + (token[10] === 'A' ? 'B' : 'A') + token.slice(11);
    expect(hasValidTokenShape('apiKey', flipped)).toBe(false);
    expect(hasValidTokenShape('agent', token)).toBe(false);
    expect(hasValidTokenShape('apiKey', token.slice(0, -1))).toBe(false);
    expect(hasValidTokenShape('apiKey', `${token}x`)).toBe(false);
    expect(hasValidTokenShape('apiKey', '')).toBe(false);
  });
});
