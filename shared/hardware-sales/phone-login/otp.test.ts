import { describe, expect, it } from 'vitest';
import { generateOtpCode, hashOtp, otpHashKey, OTP_LENGTH } from './otp.js';

describe('OTP codes and hashes', () => {
  it('codes are six digits, leading zeros kept, and spread over the whole range', () => {
    const codes = Array.from({ length: 5000 }, generateOtpCode);
    for (const code of codes) expect(code).toMatch(/^\d{6}$/);
    expect(OTP_LENGTH).toBe(6);
    expect(codes.some((c) => c.startsWith('0'))).toBe(true);
    expect(codes.some((c) => c.startsWith('9'))).toBe(true);
    expect(new Set(codes).size).toBeGreaterThan(4900);
  });

  it('the hash binds the phone and the code, is deterministic, and never contains the code', () => {
    const key = otpHashKey(undefined);
    const hash = hashOtp(key, '+8613800000000', '123456');
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    expect(hash).not.toContain('123456');
    expect(hashOtp(key, '+8613800000000', '123456')).toBe(hash);
    expect(hashOtp(key, '+8613800000001', '123456')).not.toBe(hash);
    expect(hashOtp(key, '+8613800000000', '123457')).not.toBe(hash);
    // No ambiguity between where the phone ends and the code begins.
    expect(hashOtp(key, '+861380000000', '0123456')).not.toBe(hash);
  });

  it('the key comes from SECRETS_KEY when set: another key gives another hash', () => {
    const a = otpHashKey(Buffer.alloc(32, 1).toString('base64'));
    const b = otpHashKey(Buffer.alloc(32, 2).toString('base64'));
    const none = otpHashKey(undefined);
    const hashes = [a, b, none].map((key) => hashOtp(key, '+8613800000000', '123456'));
    expect(new Set(hashes).size).toBe(3);
    // The key is derived, never SECRETS_KEY itself.
    expect(a.equals(Buffer.alloc(32, 1))).toBe(false);
  });
});
