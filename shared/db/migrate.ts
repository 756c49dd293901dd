import { Migrator, type MigrationResultSet } from 'kysely';
import type { Database } from './client.js';
import { migrations } from './migrations/index.js';

export async function migrateToLatest(db: Database): Promise<MigrationResultSet> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  const result = await migrator.migrateToLatest();
  if (result.error) {
    const failed = result.results?.find((r) => r.status === 'Error');
    throw new Error(`Migration ${failed?.migrationName ?? '(unknown)'} failed: ${String(result.error)}`, { cause: result.error });
  }
  return result;
}
