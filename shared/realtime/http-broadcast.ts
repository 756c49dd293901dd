import { LRUCache } from 'lru-cache';
import type { DataApiIdentityResolver } from '../data-api/identity.js';
import { DataApiError } from '../data-api/errors.js';
import type { Database } from '../db/client.js';
import { mayJoinMemberTopic } from './authorization.js';
import type { RealtimeHub } from './hub.js';
import { RateBucket, type RealtimeLimits } from './limits.js';
import type { BroadcastMessage } from './serializer.js';
import { memberTopicOf, TOPIC_PREFIX } from './topics.js';

/** Messages one HTTP broadcast call may carry. */
const MAX_MESSAGES = 100;

const refuse = (status: number, code: string, message: string) => new DataApiError(status, code, message);

/**
 * Broadcast over HTTP, for a client that is not joined: supabase-js's `send()` falls back to
 * `POST /realtime/v1/api/broadcast` `{ messages: [{ topic, event, payload }] }`, and `httpSend()`
 * posts one payload to `/realtime/v1/api/broadcast/<topic>/events/<event>`. The same rules as on
 * the socket: a member of each topic's team, member topics only, the payload limit, the rate per
 * caller. All messages are checked before any is sent: one refused message sends none.
 */
export function createHttpBroadcast(deps: { db: Database; hub: RealtimeHub; identity: DataApiIdentityResolver; limits: RealtimeLimits }) {
  const buckets = new LRUCache<string, RateBucket>({ max: 10_000, ttl: 60_000 });

  return async function broadcastOverHttp(headers: Record<string, string | string[] | undefined>, raw: unknown): Promise<void> {
    const identity = await deps.identity.resolve({ headers });
    if (identity.role !== 'authenticated') throw refuse(403, 'Unauthorized', 'Broadcast needs a signed-in member of the topic\'s team');
    const list = (raw as { messages?: unknown } | null)?.messages;
    if (!Array.isArray(list) || list.length === 0 || list.length > MAX_MESSAGES) throw refuse(400, 'InvalidBody', `The body is { messages: [{ topic, event, payload }] } with 1 to ${MAX_MESSAGES} messages`);
    const messages: BroadcastMessage[] = [];
    for (const entry of list as Array<Record<string, unknown> | null>) {
      const { topic, event, payload } = entry ?? {};
      if (typeof topic !== 'string' || typeof event !== 'string') throw refuse(400, 'InvalidBody', 'Each message needs a string topic and event');
      const member = memberTopicOf(topic);
      if (!member) throw refuse(403, 'Unauthorized', 'Broadcast and presence work only on the topics team:<id>, project:<id> and document:<id>');
      if (!(await mayJoinMemberTopic(deps.db, identity.userId, member))) throw refuse(403, 'Unauthorized', `You do not have permissions to write to this Channel topic: ${topic}`);
      const bytes = Buffer.from(JSON.stringify(payload ?? {}), 'utf8');
      if (bytes.length > deps.limits.maxBroadcastBytes) throw refuse(413, 'PayloadTooLarge', `A broadcast payload has at most ${deps.limits.maxBroadcastBytes} bytes`);
      messages.push({ topic: TOPIC_PREFIX + topic, event, encoding: 'json', bytes });
    }
    const bucket = buckets.get(identity.userId) ?? new RateBucket(deps.limits.broadcastsPerSecond);
    buckets.set(identity.userId, bucket);
    for (let i = 0; i < messages.length; i++) if (!bucket.take()) throw refuse(429, 'ClientBroadcastRateLimitReached', 'Too many messages per second');
    for (const message of messages) deps.hub.broadcast(message, null);
  };
}
