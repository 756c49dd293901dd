// What every signed delivery shares (paddle, Standard Webhooks): its headers, one header looked up,
// and why a delivery was refused.

/** Request headers as Node and Fastify give them: a repeated header arrives as an array. */
export type WebhookHeaders = Record<string, string | string[] | undefined>;

/** Why a signed delivery was refused; each channel's verifier runs the checks in this order. */
export type WebhookVerificationReason = 'missing_header' | 'malformed_header' | 'timestamp_out_of_window' | 'bad_signature';

export class WebhookVerificationError extends Error {
  constructor(readonly reason: WebhookVerificationReason, message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

/**
 * A header of a signed delivery, looked up case-insensitively: undefined when absent or empty,
 * null when repeated (several values: which one was signed is not ours to guess).
 */
export function singleHeader(headers: WebhookHeaders, lowerName: string): string | null | undefined {
  for (const [name, value] of Object.entries(headers)) {
    if (name.toLowerCase() !== lowerName) continue;
    if (Array.isArray(value) && value.length > 1) return null;
    const single = Array.isArray(value) ? value[0] : value;
    return single?.trim() || undefined;
  }
  return undefined;
}
