import { sql } from 'kysely';
import type { Database } from '../db/client.js';

export async function findSiteSetting(db: Database, key: string): Promise<{ value: unknown } | undefined> {
  return db.selectFrom('site_settings').select('value').where('key', '=', key).executeTakeFirst();
}

/** Upsert; the table's trigger NOTIFYs `site_settings_changed` on commit. */
export async function upsertSiteSetting(db: Database, key: string, value: unknown): Promise<void> {
  const json = JSON.stringify(value);
  await db
    .insertInto('site_settings')
    .values({ key, value: json, updated_at: sql<Date>`now()` as never })
    .onConflict((oc) => oc.column('key').doUpdateSet({ value: json, updated_at: sql<Date>`now()` as never }))
    .execute();
}
