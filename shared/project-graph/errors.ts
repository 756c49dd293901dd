import { retryAfterSeconds } from '../dependency-errors.js';
import { AppError } from '../errors.js';

// The graph's errors (spec §4.5, §7.4; CONTRACTS.md "Project graph"). Every 503 has the same body,
// `{ error: 'graph_unavailable', message }`, whatever failed: callers never get partial results.

export const GRAPH_UNAVAILABLE = 'graph_unavailable';

export const graphUnavailable = (message: string, headers?: Record<string, string>) => new AppError(503, GRAPH_UNAVAILABLE, message, {}, headers);

/** A passing failure (the database away, a snapshot that could not be read): the caller may retry, as with any outage. */
const transient = { 'retry-after': String(retryAfterSeconds.postgres) };

export const graphErrors = {
  off: () => graphUnavailable('The project graph is turned off'),
  incomplete: () => graphUnavailable('The project graph configuration is incomplete'),
  noActiveGeneration: () => graphUnavailable('The project has no active memory generation; run `graph build`'),
  verificationFailed: () => graphUnavailable('The graph results could not be verified against their sources; retry shortly', transient),
  storeUnavailable: () => graphUnavailable('The graph store is unavailable; retry shortly', transient),
  currentOnly: () => new AppError(400, 'graph_search_current_only', 'Graph search only answers the current view: mode must be "current", and as_of / asOf are not accepted'),
  jobNotFound: () => new AppError(404, 'Graph job not found', 'Graph job not found'),
};
