import { randomBase64Url, sha256Hex } from '../../crypto.js';

// The approval link's single-use token (CONTRACTS.md "Long runs"): `wfa-` + 43 base64url characters
// (32 random bytes), stored only as its SHA-256 (run_approvals.token_hash), expiring with the approval.

const TOKEN = /^wfa-[A-Za-z0-9_-]{43}$/;

export function newApprovalToken(): { token: string; hash: string } {
  const token = `wfa-${randomBase64Url(32)}`;
  return { token, hash: sha256Hex(token) };
}

/** The stored hash of a token of the right shape, or null (refused before any lookup). */
export const approvalTokenHash = (token: string): string | null => (TOKEN.test(token) ? sha256Hex(token) : null);

/** `<PUBLIC_BASE_URL>/approve/<token>`; without PUBLIC_BASE_URL, the local API's own address. */
export function approvalUrlOf(config: { PUBLIC_BASE_URL?: string; PORT: number }, token: string): string {
  const base = (config.PUBLIC_BASE_URL ?? `http://localhost:${config.PORT}`).replace(/\/+$/, '');
  return `${base}/approve/${token}`;
}
