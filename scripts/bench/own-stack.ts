import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { connectAppDeps } from '../../api/connect-deps.js';
import type { AppDeps } from '../../api/deps.js';
import { loadConfig } from '../../shared/config.js';
import { createDb } from '../../shared/db/client.js';
import { startEmbeddedPostgres } from '../../shared/db/embedded.js';
import { migrateToLatest } from '../../shared/db/migrate.js';
import { startTemporalDevServer } from '../../temporal/dev-server.js';

/**
 * Runs a bench section on a PostgreSQL and Temporal of its own (`npm run bench -- --only <name>`):
 * a fresh migrated database `bench_<name>`, the app's dependencies connected to it, all torn down
 * afterwards whatever happens.
 */
export async function withOwnStack(name: string, work: (deps: AppDeps, databaseUrl: string) => Promise<void>): Promise<void> {
  const workDir = await mkdtemp(path.join(os.tmpdir(), `wfapp-bench-${name}-`));
  await chmod(workDir, 0o755);
  const [postgres, temporal] = await Promise.all([
    startEmbeddedPostgres({ dataDir: path.join(workDir, 'postgres'), persistent: false }),
    startTemporalDevServer({ namespace: 'default' }),
  ]);
  try {
    const database = `bench_${name.replace(/[^a-z0-9]/g, '_')}`;
    const admin = createDb(postgres.url, { poolSize: 1 });
    await sql.raw(`CREATE DATABASE ${database}`).execute(admin);
    await admin.destroy();
    const config = loadConfig({ ...process.env, DATA_DIR: workDir, LOG_LEVEL: 'silent' });
    const databaseUrl = postgres.urlFor(database);
    const deps = await connectAppDeps(config, { databaseUrl, temporalAddress: temporal.address });
    try {
      await migrateToLatest(deps.db);
      await work(deps, databaseUrl);
    } finally {
      await deps.close();
    }
  } finally {
    await temporal.stop();
    await postgres.stop();
    await rm(workDir, { recursive: true, force: true });
  }
}
