// Claim check (DESIGN.md §3): a run's value too large for Temporal's workflow history is stored in
// `run_payloads` and the workflow carries a reference instead. Pure (no I/O): workflow code imports
// this; activities/app-runs/claim-store.ts stores and resolves.

/** A stored value of a run: `key` in `run_payloads` (`input:<name>`, `output:<blockId>`, `request:<blockId>`). */
export interface Claim {
  $claim: string;
  /** UTF-8 length of the value's JSON. */
  bytes: number;
}

/** Values whose JSON is longer than this are stored, not carried through workflow history. */
export const CLAIM_THRESHOLD_BYTES = 64 * 1024;

export function isClaim(value: unknown): value is Claim {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const { $claim, bytes } = value as Partial<Claim>;
  return typeof $claim === 'string' && typeof bytes === 'number' && Object.keys(value).length === 2;
}

/** UTF-8 length of a string without TextEncoder or Buffer (workflow sandbox). */
function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    // A surrogate pair (2 units) is 4 bytes of UTF-8: 2 per unit.
    bytes += code < 0x80 ? 1 : code < 0x800 || (code >= 0xd800 && code <= 0xdfff) ? 2 : 3;
  }
  return bytes;
}

/** UTF-8 length of `value`'s JSON (`undefined` counts as `null`). */
export function jsonBytes(value: unknown): number {
  return utf8Bytes(JSON.stringify(value) ?? 'null');
}

/** Whether `value`'s JSON is over CLAIM_THRESHOLD_BYTES: too large to carry through workflow history. */
export function exceedsClaimThreshold(value: unknown): boolean {
  const json = JSON.stringify(value) ?? 'null';
  // UTF-8 takes 1 to 3 bytes per UTF-16 unit: most lengths decide without counting.
  if (json.length > CLAIM_THRESHOLD_BYTES) return true;
  if (json.length * 3 <= CLAIM_THRESHOLD_BYTES) return false;
  return utf8Bytes(json) > CLAIM_THRESHOLD_BYTES;
}
