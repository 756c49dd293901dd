/** An RFC 6749 protocol error: `code` is the standard error code, rendered as `{ error, error_description }`. */
export class OAuthError extends Error {
  constructor(readonly code: string, readonly description: string, readonly status = 400) {
    super(description);
    this.name = 'OAuthError';
  }
}
