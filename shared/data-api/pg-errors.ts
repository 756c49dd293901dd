import { DataApiError } from './errors.js';

/** SQLSTATEs that mean the schema moved under the cache (a migration ran): read it again. */
export const SCHEMA_MOVED = new Set(['42703', '42P01', '42883']);

interface PgError { code?: string; message: string; detail?: string; hint?: string }

const isPgError = (error: unknown): error is PgError =>
  typeof error === 'object' && error !== null && typeof (error as PgError).code === 'string' && /^[0-9A-Z]{5}$/.test((error as PgError).code!);

/** PostgREST's status for a SQLSTATE (its "Errors" chapter); P0002 (no_data_found) is a 404 here, not a 500. */
const EXACT: Record<string, number> = { '23503': 409, '23505': 409, '25006': 405, '53400': 500, 'P0001': 400, 'P0002': 404, '42883': 404, '42P01': 404 };
const FAMILY: Record<string, number> = {
  '08': 503, '09': 500, '0L': 403, '0P': 403, '25': 500, '28': 403, '2D': 500, '38': 500, '39': 500, '3B': 500, '40': 500,
  '53': 503, '54': 500, '55': 500, '57': 500, '58': 500, 'F0': 500, 'HV': 500, 'P0': 500, 'XX': 500,
};

function statusOf(code: string, role: 'anon' | 'authenticated'): number {
  if (code === '42501') return role === 'anon' ? 401 : 403;
  return EXACT[code] ?? FAMILY[code.slice(0, 2)] ?? 400;
}

/** A database refusal in PostgREST's shape; anything that is not one is rethrown as it is. */
export function toDataApiError(error: unknown, role: 'anon' | 'authenticated'): unknown {
  if (!isPgError(error)) return error;
  const code = error.code!;
  if (code === '57014') return new DataApiError(500, code, 'The query took too long and was cancelled', null, 'Narrow the filters or page with limit.');
  return new DataApiError(statusOf(code, role), code, error.message, error.detail ?? null, error.hint ?? null);
}
