/**
 * The one error type of the service. `error` is the spec's error string for the route family
 * (a code such as `insufficient_credits` or a message such as `Deployment not found`);
 * `message` is a human sentence; `extra` holds spec'd fields such as `details` or `field`;
 * `headers` are set on the response whatever the family (e.g. `Retry-After` on a 503), since the
 * caller's retry logic reads the header, not the body shape.
 * The API's error handler renders it in the envelope of the route's family (spec §7.1).
 */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    message?: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message ?? error);
    this.name = 'AppError';
  }
}

export const notFound = (what: string) => new AppError(404, 'not_found', `${what} not found`);
export const badRequest = (error: string, message?: string, extra?: Record<string, unknown>) =>
  new AppError(400, error, message, extra);
export const conflict = (error: string, message?: string) => new AppError(409, error, message);
