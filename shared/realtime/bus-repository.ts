import { sql } from 'kysely';
import type { Database } from '../db/client.js';

/**
 * NOTIFY every payload on `channel` in one statement (one round trip, one transaction): the
 * listeners get them in this order, and the chunks of one message together.
 */
export async function notifyAll(db: Database, channel: string, payloads: readonly string[]): Promise<void> {
  if (payloads.length === 0) return;
  await sql`select pg_notify(${channel}, p) from unnest(${sql.val(payloads)}::text[]) with ordinality as t(p, n) order by n`.execute(db);
}
