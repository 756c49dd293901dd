import { crc32 } from 'node:zlib';
import { randomBase64Url } from '../crypto.js';

/** Token prefixes (CONTRACTS.md). Each ends with a hyphen so the kind is visible at a glance. */
export const tokenPrefixes = {
  apiKey: 'wfk-',
  oauthAccess: 'wfo-',
  oauthRefresh: 'wfr-',
  agent: 'wfa-',
  /** A verified phone number's short-lived token (hardware sales, spec §5.1). */
  phone: 'wfp-',
} as const;

export type TokenKind = keyof typeof tokenPrefixes;

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const BODY_LENGTH = 43; // 32 bytes in base64url, unpadded
const CHECKSUM_LENGTH = 6; // CRC32 < 62^6

function base62Checksum(value: string): string {
  let n = crc32(value);
  let out = '';
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

/** prefix + 32 random bytes (base64url) + CRC32 checksum (base62) over prefix and body. */
export function generateToken(kind: TokenKind): string {
  const head = tokenPrefixes[kind] + randomBase64Url(32);
  return head + base62Checksum(head);
}

/**
 * Shape and checksum check, done before any database lookup so that typos and garbage never
 * cost a query.
 */
export function hasValidTokenShape(kind: TokenKind, token: string): boolean {
  const prefix = tokenPrefixes[kind];
  if (token.length !== prefix.length + BODY_LENGTH + CHECKSUM_LENGTH || !token.startsWith(prefix)) return false;
  const head = token.slice(0, -CHECKSUM_LENGTH);
  if (!/^[A-Za-z0-9_-]+$/.test(head.slice(prefix.length))) return false;
  return base62Checksum(head) === token.slice(-CHECKSUM_LENGTH);
}
