import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { sql } from 'kysely';
import { inject } from 'vitest';
import { buildApp } from '../../api/app.js';
import type { AppDeps } from '../../api/deps.js';
import { loadConfig, type Config } from '../../shared/config.js';
import { createDb, type Database } from '../../shared/db/client.js';
import { createAuthenticator } from '../../shared/credentials/authenticate.js';
import { createIdentityProvider } from '../../shared/credentials/identity-provider.js';
import { createScheduleTokens } from '../../shared/credentials/schedule-tokens.js';
import { RunEventHub } from '../../shared/app-runs/event-log.js';
import { DeploymentCache } from '../../shared/documents/deployment-cache.js';
import { PgListener } from '../../shared/db/listener.js';
import { SiteSettingsCache } from '../../shared/site-settings/cache.js';
import { createRateLimiter } from '../../shared/rate-limit/rate-limiter.js';
import { loadSecretKeyRing } from '../../shared/secrets/key-ring.js';
import { TemporalAvailability } from '../../temporal/availability.js';
import { StartGate } from '../../shared/workflow-starts/start-gate.js';
import { connectTemporalClient } from '../../temporal/connection.js';
import { startKeepers } from '../../worker/keepers.js';
import { createWorkers, type WorkerSet } from '../../worker/create-workers.js';
import { TEMPLATE_DATABASE } from './names.js';

// Worker state changes at INFO drown test output; warnings and errors still show. The native
// client's own retries during an outage (tests kill servers on purpose) log at WARN once per
// poller per attempt: only its errors are printed.
Runtime.install({ logger: new DefaultLogger('WARN'), telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' }, console: {} } } });

export interface TestStack {
  config: Config;
  /** Environment for child processes (the CLI) that must reach this file's database. */
  env: NodeJS.ProcessEnv;
  databaseUrl: string;
  db: Database;
  deps: AppDeps;
  app: Awaited<ReturnType<typeof buildApp>>;
  /**
   * Starts this file's worker on its own task queues (suffix = the file's id), on a connection of
   * its own, or on the API client's (as `npm start` does: runs then start eagerly).
   */
  startWorker(options?: { shareClientConnection?: boolean; keepers?: boolean }): Promise<WorkerSet>;
  close(): Promise<void>;
}

/**
 * Everything one test file needs, all real: its own database cloned from the migrated template,
 * a Temporal client on the shared dev server, the API built exactly as in production (not
 * listening; use `app.inject` or `app.listen({ port: 0 })`), and a worker on demand.
 */
export async function createTestStack(overrides: NodeJS.ProcessEnv = {}, options: { temporalAddress?: string; databaseUrl?: string } = {}): Promise<TestStack> {
  // A file that kills its Temporal server or its PostgreSQL brings its own (a migrated database for
  // `databaseUrl`); the rest share one of each.
  const temporalAddress = options.temporalAddress ?? inject('temporalAddress');
  const id = randomBytes(5).toString('hex');
  const urlFor = (db: string) => inject('postgresUrlPattern').replace('{db}', db);
  if (!options.databaseUrl) {
    const admin = createDb(urlFor('postgres'), { poolSize: 1 });
    await sql.raw(`CREATE DATABASE test_${id} TEMPLATE ${TEMPLATE_DATABASE}`).execute(admin);
    await admin.destroy();
  }

  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'wfapp-file-'));
  const databaseUrl = options.databaseUrl ?? urlFor(`test_${id}`);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    DATA_DIR: dataDir,
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporalAddress,
    TEMPORAL_TASK_QUEUE_SUFFIX: id,
    ...overrides,
  };
  const config = loadConfig(env);
  const db = createDb(databaseUrl, { poolSize: 5 });
  const listener = new PgListener(databaseUrl);
  const settings = new SiteSettingsCache(db);
  settings.follow(listener);
  const runEvents = new RunEventHub();
  runEvents.follow(listener);
  const deployments = new DeploymentCache();
  deployments.follow(listener);
  await listener.start();
  const temporal = await connectTemporalClient(temporalAddress, config.TEMPORAL_NAMESPACE);
  const availability = new TemporalAvailability(temporal.connection);
  const idp = await createIdentityProvider(config);
  const scheduleTokens = await createScheduleTokens(config.DATA_DIR);
  const authenticator = createAuthenticator({ db, idp, scheduleTokens });
  const rateLimiter = createRateLimiter({ redisUrl: config.REDIS_URL });
  const secrets = await loadSecretKeyRing(config);
  const deps: AppDeps = {
    config, db, settings, runEvents, deployments, idp, scheduleTokens, authenticator, rateLimiter, secrets, temporal: { client: temporal.client, connection: temporal.connection, availability, gate: new StartGate() },
  };
  const app = await buildApp(deps, { logger: false });

  const workerSets: Array<{ set: WorkerSet; connection: NativeConnection | null }> = [];
  const keeperLoops: Array<{ stop(): Promise<void> }> = [];
  return {
    config, env, databaseUrl, db, deps, app,
    async startWorker({ shareClientConnection = false, keepers = false } = {}) {
      const connection = shareClientConnection ? temporal.connection : await NativeConnection.connect({ address: temporalAddress });
      const set = await createWorkers({
        connection, namespace: config.TEMPORAL_NAMESPACE, deps: { db, settings, config, secrets },
        workflowBundle: { codePath: inject('workflowBundlePath') }, taskQueueSuffix: id,
      });
      void set.run();
      workerSets.push({ set, connection: shareClientConnection ? null : connection });
      // The outbox dispatcher and the run reconciler, as worker/start.ts runs them (config from `overrides`).
      if (keepers) keeperLoops.push(startKeepers({ db, client: temporal.client, config, log: () => {} }));
      return set;
    },
    async close() {
      // A connection that never sent a request (a client's spare one, as fetch opens) is not idle to
      // Node, so close() would wait for its headers timeout (60 s); the test is over, so cut them.
      const closing = app.close();
      app.server.closeAllConnections();
      await closing;
      for (const loop of keeperLoops) await loop.stop();
      availability.close();
      for (const { set, connection } of workerSets) {
        await set.shutdown();
        await connection?.close();
      }
      await temporal.close();
      await rateLimiter.close();
      await listener.close();
      await db.destroy();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
