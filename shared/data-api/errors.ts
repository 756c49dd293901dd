/**
 * An error in PostgREST's shape (`{ code, message, details, hint }`) with its HTTP status, so the
 * data-API routes (REST, RPC, storage) answer what supabase-js expects. Codes: PostgREST's own
 * (`PGRSTxxx`) for the API layer, SQLSTATEs for database refusals.
 */
export class DataApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: string | null = null,
    readonly hint: string | null = null,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = 'DataApiError';
  }

  get body(): { code: string; message: string; details: string | null; hint: string | null } {
    return { code: this.code, message: this.message, details: this.details, hint: this.hint };
  }
}

/** A request outside the supported subset: 400 naming what is unsupported (never a wrong answer). */
export const unsupported = (what: string, hint: string | null = null) =>
  new DataApiError(400, 'PGRST100', `Unsupported by this data API: ${what}`, null, hint);

/** Malformed input PostgREST would refuse while parsing. */
export const parseError = (message: string, details: string | null = null) => new DataApiError(400, 'PGRST100', message, details);
