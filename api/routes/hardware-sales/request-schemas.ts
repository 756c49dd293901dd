import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { AppError } from '../../../shared/errors.js';

// What the buyer's requests share: one address schema for create and for changing it later (so
// both accept and refuse the same addresses; blank optional fields mean absent), and one way to
// answer a schema failure in the public envelope.

const text = (max: number) => z.string().trim().min(1).max(max);
const optionalText = (max: number, pattern?: RegExp, what = 'invalid format') =>
  z.string().trim().max(max).refine((value) => value === '' || !pattern || pattern.test(value), what).nullish();

export const addressSchema = z.object({
  receiverName: text(50),
  receiverPhone: optionalText(20, /^(\+[1-9]\d{7,14}|\d{5,15})$/, 'expected E.164 (+8613800000000) or local digits'),
  province: text(50),
  city: text(50),
  district: optionalText(50),
  addressLine: text(200),
  postalCode: optionalText(12, /^[A-Za-z0-9][A-Za-z0-9 -]{1,10}[A-Za-z0-9]$/, 'expected a postal code such as 100000'),
});

export const blankToNull = (value: string | null | undefined): string | null => (value === undefined || value === null || value === '' ? null : value);

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
