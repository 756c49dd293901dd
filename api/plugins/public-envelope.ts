import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { unavailableDependency } from '../../shared/dependency-errors.js';
import { AppError } from '../../shared/errors.js';

// The public family's pieces (spec §7.1, `useErrorEnvelope(app, 'public')`): the error body's
// schema for routes' `response`, a schema failure as a public 400, and 5xx as `INTERNAL_ERROR`.

export const publicError = z.object({ success: z.literal(false), error: z.object({ code: z.string(), message: z.string() }) });

type ValidationFailure = Error & { validation?: Array<{ instancePath: string; message?: string }>; validationContext?: string };

/**
 * A route's schema failure (`attachValidation`) in the public envelope: 400 with the code
 * `codeFor` gives the first failing field (e.g. `INVALID_ADDRESS` for an address field).
 */
export function rejectInvalid(request: FastifyRequest, codeFor: (path: string[], context: string) => string): void {
  const failure = request.validationError as ValidationFailure | undefined;
  if (!failure) return;
  const first = failure.validation?.[0];
  const path = (first?.instancePath ?? '').split('/').filter(Boolean);
  const context = failure.validationContext ?? 'body';
  const field = [context, ...path].join('.');
  throw new AppError(400, codeFor(path, context), first ? `${field}: ${first.message ?? 'invalid'}` : 'Invalid request');
}

/**
 * Failures of this scope in the public codes (spec §7.6): a 5xx is `INTERNAL_ERROR`, the cause kept
 * for the log. An unreachable database still passes through as 503 `dependency_unavailable` with
 * Retry-After (errors plugin), and refusals (AppError, 4xx) as they are. A thrown error reaches the
 * parent (the service's) error handler, which renders the public envelope.
 */
export function useInternalErrorCode(app: FastifyInstance): void {
  app.setErrorHandler((error: Error & { statusCode?: number }) => {
    if (error instanceof AppError || unavailableDependency(error) || (error.statusCode !== undefined && error.statusCode < 500)) throw error;
    throw Object.assign(new AppError(500, 'INTERNAL_ERROR', 'Internal server error'), { cause: error });
  });
}
