// `npm run migrate`: applies pending migrations to DATABASE_URL (the compose `migrate` job runs it).
import { loadConfig } from '../shared/config.js';
import { createDb } from '../shared/db/client.js';
import { migrateToLatest } from '../shared/db/migrate.js';

const config = loadConfig();
if (!config.DATABASE_URL) {
  console.error('DATABASE_URL must be set');
  process.exit(2);
}
const db = createDb(config.DATABASE_URL, { poolSize: 1, applicationName: 'wfapp-migrate' });
try {
  const result = await migrateToLatest(db);
  const applied = (result.results ?? []).map((r) => r.migrationName);
  console.log(JSON.stringify({ applied }));
} finally {
  await db.destroy();
}
