import type { Database } from '../db/client.js';
import { AppError } from '../errors.js';
import type { RunCaller } from './run-access.js';
import { deleteIdempotencyKey, findIdempotencyKey } from './run-idempotency-repository.js';

// `Idempotency-Key` on run requests (beyond the spec; docs/app-runs.md): the same key with the same
// request within 24 h answers with the first run; with a different request it is 409.

const IDEMPOTENCY_WINDOW_HOURS = 24;

/** Raised inside the run's transaction when another request claimed the key first. */
export class IdempotentReplay extends Error {}

/** Keys are scoped to the credential that sent them; only the run endpoints' own credentials (and schedules, per attempt) send one. */
export function idempotencyScopeOf(caller: RunCaller): string | undefined {
  switch (caller.kind) {
    case 'api-key': return `api-key:${caller.apiKeyId}`;
    case 'oauth': return `oauth:${caller.userId}:${caller.clientId}`;
    case 'schedule': return `schedule:${caller.scheduleId}`;
    default: return undefined;
  }
}

/**
 * The run an earlier request with this key started, within the window; 409 when the key comes back
 * with a different request. An expired key is released for reuse.
 */
export async function findIdempotentRun(db: Database, k: { scope: string; key: string; requestHash: string }): Promise<string | null> {
  const row = await findIdempotencyKey(db, k.scope, k.key);
  if (!row) return null;
  if (row.created_at.getTime() < Date.now() - IDEMPOTENCY_WINDOW_HOURS * 3_600_000) {
    await deleteIdempotencyKey(db, k.scope, k.key, row.run_id);
    return null;
  }
  if (row.request_hash !== k.requestHash) {
    throw new AppError(409, 'idempotency_key_reused', 'This Idempotency-Key was used for a different request in the last 24 hours');
  }
  return row.run_id;
}
