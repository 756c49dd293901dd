import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { dependencyUnavailable, unavailableDependency } from '../../shared/dependency-errors.js';
import { AppError } from '../../shared/errors.js';

/**
 * Route families render errors differently (spec §7.1). A route group picks its family once with
 * `useErrorEnvelope(app, 'public')`; everything else gets the standard `{ error, message }`.
 */
export type ErrorEnvelope = 'standard' | 'public' | 'webhook' | 'payment' | 'hardware-callback' | 'connectors';

declare module 'fastify' {
  interface FastifyContextConfig {
    errorEnvelope?: ErrorEnvelope;
  }
}

/** Sets the error family for every route registered later in this (encapsulated) plugin. */
export function useErrorEnvelope(app: FastifyInstance, envelope: ErrorEnvelope): void {
  app.addHook('onRoute', (route) => {
    route.config = { ...(route.config as object), errorEnvelope: envelope } as typeof route.config;
  });
}

interface Problem {
  status: number; error: string; message: string; extra: Record<string, unknown>;
  /** Set whatever the envelope: even the plain-text payment family keeps `Retry-After`. */
  headers?: Readonly<Record<string, string>>;
}

const fromAppError = (error: AppError): Problem =>
  ({ status: error.status, error: error.error, message: error.message, extra: error.extra, headers: error.headers });

function toProblem(error: FastifyError | AppError | Error): Problem {
  if (error instanceof AppError) return fromAppError(error);
  // A dependency that cannot be reached is not our bug: 503 with Retry-After, naming which one.
  const dependency = unavailableDependency(error);
  if (dependency) return fromAppError(dependencyUnavailable(dependency));
  if (hasZodFastifySchemaValidationErrors(error)) {
    const details = error.validation.map((issue) => ({
      field: [error.validationContext, ...issue.instancePath.split('/').filter(Boolean)].join('.'),
      message: issue.message,
    }));
    const first = details[0];
    return { status: 400, error: 'invalid_request', message: first ? `${first.field}: ${first.message}` : 'Invalid request', extra: { details } };
  }
  const fastifyError = error as FastifyError;
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { status: 400, error: 'invalid_json', message: `Malformed JSON body: ${fastifyError.message}`, extra: {} };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, error: 'request_body_too_large', message: 'Request body is larger than the limit', extra: {} };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 415, error: 'unsupported_media_type', message: fastifyError.message, extra: {} };
  }
  // Node's JSON.parse SyntaxError when a parser other than Fastify's raised it.
  if (error instanceof SyntaxError && fastifyError.statusCode === 400) {
    return { status: 400, error: 'invalid_json', message: `Malformed JSON body: ${error.message}`, extra: {} };
  }
  const status = fastifyError.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    return { status, error: fastifyError.code?.toLowerCase() ?? 'bad_request', message: fastifyError.message, extra: {} };
  }
  // 5xx: the caller learns nothing about our internals; the log has the details.
  return { status: status >= 500 && status < 600 ? status : 500, error: 'internal_error', message: 'Internal server error', extra: {} };
}

/**
 * The generic request codes in the words of a family whose spec names them: connectors say
 * `invalid_body` for a body that is not JSON (§7.7); the public family's codes are upper case and a
 * bad request there is `INVALID_REQUEST` (§7.6, §4.7), whether its JSON is malformed or a field fails.
 */
const familyCodes: Partial<Record<ErrorEnvelope, Partial<Record<string, string>>>> = {
  connectors: { invalid_json: 'invalid_body' },
  public: { invalid_json: 'INVALID_REQUEST', invalid_request: 'INVALID_REQUEST' },
};

/**
 * The payment channels' callbacks (spec §4.7): every failure is FAIL at 500, the framework's own
 * refusals (a body over the limit) included; a 5xx keeps its status (an outage's 503 and
 * Retry-After). A channel retries on any answer but success either way.
 */
const channelCallbacks: ReadonlySet<ErrorEnvelope> = new Set(['payment', 'hardware-callback']);

function send(reply: FastifyReply, envelope: ErrorEnvelope, problem: Problem) {
  const familyCode = familyCodes[envelope]?.[problem.error];
  const p = familyCode ? { ...problem, error: familyCode } : problem;
  reply.code(channelCallbacks.has(envelope) && p.status < 500 ? 500 : p.status);
  if (p.headers) reply.headers(p.headers);
  // A route that failed after choosing a stream type (an event stream whose first read found the
  // database gone) still answers its error as JSON: Fastify refuses an object body of another type.
  if (envelope !== 'payment') reply.type('application/json; charset=utf-8');
  switch (envelope) {
    case 'hardware-callback':
      return reply.send({ code: 'FAIL' });
    case 'public':
      return reply.send({ success: false, error: { code: p.error, message: p.message } });
    case 'webhook':
      return reply.send({ code: p.error, message: p.message, ...p.extra });
    case 'payment':
      return reply.type('text/plain; charset=utf-8').send('FAIL');
    case 'connectors':
      return reply.send({ error: p.error, ...p.extra });
    default:
      return reply.send({ error: p.error, message: p.message, ...p.extra });
  }
}

export const errorsPlugin = fp(async (app) => {
  app.setErrorHandler((error: FastifyError | AppError, request: FastifyRequest, reply: FastifyReply) => {
    const problem = toProblem(error);
    // An outage is operations, not a defect in this service: warn, naming the dependency, so the
    // error level stays for bugs (/readyz reports the outage itself). The same when a route refused
    // early with dependencyUnavailable() (TemporalAvailability), which arrives as an AppError.
    if (problem.error === 'dependency_unavailable') request.log.warn({ err: error, dependency: problem.extra.dependency }, 'dependency unavailable');
    else if (problem.status >= 500) request.log.error({ err: error }, 'request failed');
    else request.log.info({ status: problem.status, error: problem.error }, 'request refused');
    return send(reply, request.routeOptions.config.errorEnvelope ?? 'standard', problem);
  });
  app.setNotFoundHandler((request, reply) =>
    send(reply, 'standard', { status: 404, error: 'not_found', message: `Route ${request.method} ${request.url.split('?')[0]} not found`, extra: {} }),
  );
}, { name: 'errors' });
