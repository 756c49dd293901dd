import { Client } from '@temporalio/client';
import { NativeConnection, type WorkflowBundleOption } from '@temporalio/worker';
import type { Config } from '../shared/config.js';
import { createDb } from '../shared/db/client.js';
import { PgListener } from '../shared/db/listener.js';
import { startScheduleReconciler } from '../shared/schedules/temporal-sync.js';
import { loadSecretKeyRing } from '../shared/secrets/key-ring.js';
import { SiteSettingsCache } from '../shared/site-settings/cache.js';
import { createWorkers, type WorkerSet } from './create-workers.js';
import { startRunPayloadSweeper } from '../activities/app-runs/payload-sweeper.js';
import { startKeepers } from './keepers.js';

export interface RunningWorkers {
  workers: WorkerSet;
  /** Resolves when every worker has stopped. */
  done: Promise<void>;
  shutdown(): Promise<void>;
}

/** Connects, creates one Worker per task queue and starts polling. */
export async function startWorkers(options: {
  config: Config;
  databaseUrl: string;
  temporalAddress: string;
  workflowBundle: WorkflowBundleOption;
  /**
   * The API's connection, when the API runs in the same process (`npm start`): the runs it starts
   * with `requestEagerStart` are then handed to these workers in the start call's answer, without
   * a pass through the task queue. Left open at shutdown: its owner closes it.
   */
  connection?: NativeConnection;
  log?: (message: string) => void;
}): Promise<RunningWorkers> {
  const log = options.log ?? (() => {});
  // First: a bad key file fails the start before any connection is opened.
  const secrets = await loadSecretKeyRing(options.config);
  const db = createDb(options.databaseUrl, { poolSize: options.config.DATABASE_POOL_SIZE, applicationName: 'wfapp-worker', onConnectionError: (e) => log(`database connection lost: ${e.message}`) });
  const listener = new PgListener(options.databaseUrl, (error) => log(`database listener: ${error.message}`));
  const settings = new SiteSettingsCache(db, { onInvalid: (key, reason) => log(`site setting ${key} is invalid, using defaults: ${reason}`) });
  settings.follow(listener);
  let opened: NativeConnection | undefined;
  let workers: WorkerSet;
  try {
    await listener.start();
    opened = options.connection ?? await NativeConnection.connect({ address: options.temporalAddress });
    workers = await createWorkers({
      connection: opened, namespace: options.config.TEMPORAL_NAMESPACE, deps: { db, settings, config: options.config, secrets }, workflowBundle: options.workflowBundle,
      taskQueueSuffix: options.config.TEMPORAL_TASK_QUEUE_SUFFIX,
    });
  } catch (error) {
    // A start that fails (PostgreSQL or Temporal away) is retried by the caller: release what it opened.
    if (opened && !options.connection) await opened.close().catch(() => {});
    await listener.close();
    await db.destroy();
    throw error;
  }
  const connection = opened;
  const client = new Client({ connection, namespace: options.config.TEMPORAL_NAMESPACE });
  // Temporal Schedules follow the schedule rows: fixed at start, then re-checked on a timer.
  const reconciler = startScheduleReconciler(db, {
    client, taskQueueSuffix: options.config.TEMPORAL_TASK_QUEUE_SUFFIX,
  }, { intervalMs: options.config.SCHEDULE_RECONCILE_INTERVAL_SECONDS * 1000, log });
  const keepers = startKeepers({ db, client, config: options.config, log });
  const sweeper = startRunPayloadSweeper(db, log);
  const done = workers.run().finally(async () => {
    await keepers.stop();
    await reconciler.stop();
    await sweeper.stop();
    if (!options.connection) await connection.close();
    await listener.close();
    await db.destroy();
  });
  return { workers, done, shutdown: async () => { await workers.shutdown(); await done; } };
}
