/** Request headers as Node and Fastify give them: a repeated header arrives as an array. */
export type WebhookHeaders = Record<string, string | string[] | undefined>;

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
