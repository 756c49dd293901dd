import { sql } from 'kysely';
import type { Database } from '../db/client.js';

/** Column names and their types (`information_schema.columns.data_type`) of the given public tables. */
export async function findRelationColumns(db: Database, relations: readonly string[]): Promise<Array<{ table_name: string; column_name: string; data_type: string }>> {
  if (relations.length === 0) return [];
  const { rows } = await sql<{ table_name: string; column_name: string; data_type: string }>`
    select table_name::text, column_name::text, data_type::text
    from information_schema.columns
    where table_schema = 'public' and table_name in (${sql.join(relations)})
    order by table_name, ordinal_position`.execute(db);
  return rows;
}
