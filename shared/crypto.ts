import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export const sha256Hex = (value: string): string => createHash('sha256').update(value).digest('hex');

export const randomBase64Url = (bytes: number): string => randomBytes(bytes).toString('base64url');

/** Constant-time string comparison; different lengths compare unequal without an early exit on content. */
export function constantTimeEqual(a: string, b: string): boolean {
  const left = createHash('sha256').update(a).digest();
  const right = createHash('sha256').update(b).digest();
  return timingSafeEqual(left, right) && a.length === b.length;
}

const BASE64_OR_BASE64URL = /^[A-Za-z0-9+/_-]+={0,2}$/;

/** A 32-byte AES-256 key from base64 (or base64url), or null when the text is not exactly that. */
export function decodeAes256Key(text: string): Buffer | null {
  if (!BASE64_OR_BASE64URL.test(text)) return null;
  const key = Buffer.from(text, text.includes('-') || text.includes('_') ? 'base64url' : 'base64');
  return key.length === 32 ? key : null;
}
