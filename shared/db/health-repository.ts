import { sql } from 'kysely';
import type { Database } from './client.js';

/** The readiness check's round trip: resolves when PostgreSQL answers a query. */
export async function pingDatabase(db: Database): Promise<void> {
  await sql`select 1`.execute(db);
}
