import { Webhook } from 'standardwebhooks';

/**
 * Standard Webhooks headers of one delivery attempt, signed with every live secret (space-separated
 * `v1,<base64>` during a rotation's overlap), by the maintained `standardwebhooks` package. The body
 * is our own UTF-8 JSON, so its string form is exactly the bytes sent. The timestamp is the attempt's:
 * receivers refuse stale ones (5 minutes), and retries go on for a day.
 */
export function signedCallbackHeaders(secrets: readonly string[], eventId: string, body: string, at = new Date()): Record<string, string> {
  const signature = secrets.map((secret) => new Webhook(secret).sign(eventId, at, body)).join(' ');
  return {
    'webhook-id': eventId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signature,
  };
}
