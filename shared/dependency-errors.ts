import { AppError } from './errors.js';

/**
 * Recognises "PostgreSQL / Temporal cannot be reached" among the errors a request can raise, so the
 * API answers 503 `dependency_unavailable` with `Retry-After` instead of 500 `internal_error`.
 * Every shape matched here was observed from the real client libraries against real servers; the
 * shapes are recorded in shared/dependency-errors.test.ts.
 */
export type Dependency = 'postgres' | 'temporal';

const displayName: Record<Dependency, string> = { postgres: 'PostgreSQL', temporal: 'Temporal' };

/**
 * 5 s for both: the pool gives up on a connection attempt after 5 s (createDb's
 * connectionTimeoutMillis), and TemporalAvailability probes every second, so a caller retrying
 * after 5 s meets a recovered service after one short restart or failover, without a retry storm
 * of clients told "now" while the dependency is still down.
 */
export const retryAfterSeconds: Record<Dependency, number> = { postgres: 5, temporal: 5 };

export function dependencyUnavailable(dependency: Dependency, retryAfter = retryAfterSeconds[dependency]): AppError {
  return new AppError(
    503, 'dependency_unavailable', `${displayName[dependency]} is unavailable; retry shortly`,
    { dependency }, { 'retry-after': String(retryAfter) },
  );
}

/** Which dependency an unknown error says is down, if any. Temporal first: its signals are the more specific. */
export function unavailableDependency(error: unknown): Dependency | null {
  if (isTemporalUnavailable(error)) return 'temporal';
  if (isDatabaseUnavailable(error)) return 'postgres';
  return null;
}

interface ErrorLike { name?: unknown; message?: unknown; code?: unknown; metadata?: unknown }

/** The error, its `cause` chain and AggregateError members (node's multi-address connect), each once. */
function errorChain(error: unknown, seen = new Set<object>()): ErrorLike[] {
  if (typeof error !== 'object' || error === null || seen.has(error) || seen.size >= 32) return [];
  seen.add(error);
  const members = (error as { errors?: unknown }).errors;
  return [
    error as ErrorLike,
    ...(Array.isArray(members) ? members.flatMap((member) => errorChain(member, seen)) : []),
    ...errorChain((error as { cause?: unknown }).cause, seen),
  ];
}

/** Node's socket errnos when a TCP connection cannot be made or dies (pg passes them through unwrapped). */
const socketErrnos = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'EHOSTDOWN',
  'ENETUNREACH', 'ENETDOWN', 'EADDRNOTAVAIL', 'ENOTFOUND', 'EAI_AGAIN',
]);

/**
 * SQLSTATEs of a server that is going away or cannot take us: class 08 (connection exception) is
 * matched by prefix; 57P01 admin_shutdown (also pg_terminate_backend), 57P02 crash_shutdown,
 * 57P03 cannot_connect_now (starting up, shutting down, recovery), 53300 too_many_connections.
 */
const unavailableSqlStates = new Set(['57P01', '57P02', '57P03', '53300']);

/** Errors node-postgres creates itself, without a code. */
const pgConnectionMessages = new Set([
  'Connection terminated unexpectedly', // the socket closed under a connected client
  'Connection terminated due to connection timeout', // connectionTimeoutMillis while connecting
  'timeout exceeded when trying to connect', // pg.Pool: no client free within connectionTimeoutMillis
  'Client has encountered a connection error and is not queryable', // a query on a client whose socket errored
]);

/**
 * A fetch() failure carries the same socket errnos in its `cause`: that is an HTTP peer's outage
 * (an LLM provider, a JWKS endpoint), which must not be blamed on the database.
 */
const isFetchFailure = (e: ErrorLike) => e instanceof TypeError && e.message === 'fetch failed';

export function isDatabaseUnavailable(error: unknown): boolean {
  const chain = errorChain(error);
  if (chain.some(isFetchFailure)) return false;
  return chain.some(({ code, message }) =>
    (typeof code === 'string' && (socketErrnos.has(code) || unavailableSqlStates.has(code) || /^08[0-9A-Z]{3}$/.test(code)))
    || (typeof message === 'string' && pgConnectionMessages.has(message)));
}

const GRPC_DEADLINE_EXCEEDED = 4;
const GRPC_UNAVAILABLE = 14;

/**
 * Messages of connections that never reached the server: the native (Rust) client's tonic
 * transport errors ("tcp connect error", "Connection refused"), and @grpc/grpc-js's waitForReady
 * ("Failed to connect before the deadline", from `Connection.connect`). Case-sensitive on purpose:
 * our own HTTP client's "connection refused" (shared/outbound-http/safe-http-client.ts) is not Temporal.
 */
const temporalTransportMessage = /transport error|tcp connect error|Connection refused|^Failed to connect before the deadline$/;

/**
 * Matched by shape and name, not instanceof: the native client's errors come from
 * @temporalio/core-bridge (importing it here would load the native module into every user of
 * shared/), and a second copy of a package would defeat instanceof anyway. A gRPC status error
 * (@grpc/grpc-js, or the native client's ServiceError) has a numeric `code` and `metadata`; the
 * client wraps it as the `cause` of its own ServiceError ("Failed to start Workflow").
 */
export function isTemporalUnavailable(error: unknown): boolean {
  return errorChain(error).some(({ name, message, code, metadata }) =>
    (typeof code === 'number' && metadata !== undefined && (code === GRPC_UNAVAILABLE || code === GRPC_DEADLINE_EXCEEDED))
    || name === 'TransportError' || name === TemporalCallTimeout.NAME
    || (typeof message === 'string' && temporalTransportMessage.test(message)));
}

/**
 * A Temporal call we stopped waiting for. The native client does not honour `withDeadline` against
 * a server that refuses connections (it retries for about ten seconds), so a caller that must
 * answer sooner races the call against a timer and throws this; the call itself may still land.
 */
export class TemporalCallTimeout extends Error {
  static readonly NAME = 'TemporalCallTimeout';
  constructor(what: string, ms: number) {
    super(`${what}: no answer from Temporal within ${ms} ms`);
    this.name = TemporalCallTimeout.NAME;
  }
}
