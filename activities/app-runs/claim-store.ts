import { CLAIM_THRESHOLD_BYTES, isClaim, type Claim } from '../../shared/app-runs/claims.js';
import type { ClaimedIoRequest } from '../../shared/app-runs/contracts.js';
import type { Database } from '../../shared/db/client.js';

// The activity side of the claim check (shared/app-runs/claims.ts): stores a run's large values in
// `run_payloads` and puts them back in place of their claims.

/**
 * `value` itself when its JSON fits under CLAIM_THRESHOLD_BYTES, else a claim after storing it as
 * `key` of the run. Idempotent: a retried activity overwrites the same row with the same value.
 */
export async function storeClaim<T>(db: Database, runId: string, key: string, value: T): Promise<T | Claim> {
  const json = JSON.stringify(value) ?? 'null';
  const bytes = Buffer.byteLength(json);
  if (bytes <= CLAIM_THRESHOLD_BYTES) return value;
  await db.insertInto('run_payloads')
    .values({ run_id: runId, key, payload: json, bytes })
    .onConflict((oc) => oc.columns(['run_id', 'key']).doUpdateSet({ payload: json, bytes }))
    .execute();
  return { $claim: key, bytes } satisfies Claim;
}

function collectKeys(value: unknown, keys: Set<string>): void {
  if (value === null || typeof value !== 'object') return;
  if (isClaim(value)) {
    keys.add(value.$claim);
    return;
  }
  for (const item of Array.isArray(value) ? value : Object.values(value)) collectKeys(item, keys);
}

function replaceClaims(value: unknown, stored: ReadonlyMap<string, unknown>, map: (resolved: unknown) => unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (isClaim(value)) return map(stored.get(value.$claim));
  if (Array.isArray(value)) return value.map((item) => replaceClaims(item, stored, map));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, replaceClaims(v, stored, map)]));
}

/**
 * `value` with every claim (at any depth) replaced by the stored value, optionally passed through
 * `map`; one query for all of them. Values without claims are returned as they are. A claim whose
 * row is missing is an error: it would silently change the run's data.
 */
export async function resolveClaims<T>(db: Database, runId: string, value: T, map: (resolved: unknown) => unknown = (v) => v): Promise<T> {
  const keys = new Set<string>();
  collectKeys(value, keys);
  if (keys.size === 0) return value;
  const rows = await db.selectFrom('run_payloads').select(['key', 'payload'])
    .where('run_id', '=', runId).where('key', 'in', [...keys]).execute();
  const stored = new Map(rows.map((row) => [row.key, row.payload]));
  const missing = [...keys].filter((key) => !stored.has(key));
  if (missing.length > 0) throw new Error(`run ${runId}: stored payload ${missing.join(', ')} not found`);
  return replaceClaims(value, stored, map) as T;
}

/** An I/O activity's request: as passed, or the stored rendering (`IoBlockCall`) of a claimed one. */
export async function resolveIoRequest<T extends { runId: string; blockId: string }>(db: Database, input: T | ClaimedIoRequest): Promise<T> {
  if (!('claimedRequest' in input)) return input;
  const call = await resolveClaims<unknown>(db, input.runId, input.claimedRequest) as { request: Omit<T, 'runId' | 'blockId'> };
  return { ...call.request, runId: input.runId, blockId: input.blockId } as T;
}
