import type { NativeConnection } from '@temporalio/worker';
import type { Config } from '../shared/config.js';
import { createDb } from '../shared/db/client.js';
import { createAuthenticator } from '../shared/credentials/authenticate.js';
import { createIdentityProvider } from '../shared/credentials/identity-provider.js';
import { createScheduleTokens } from '../shared/credentials/schedule-tokens.js';
import { RunEventHub } from '../shared/app-runs/event-log.js';
import { DeploymentCache } from '../shared/documents/deployment-cache.js';
import { PgListener } from '../shared/db/listener.js';
import { SiteSettingsCache } from '../shared/site-settings/cache.js';
import { createRateLimiter } from '../shared/rate-limit/rate-limiter.js';
import { loadSecretKeyRing } from '../shared/secrets/key-ring.js';
import { TemporalAvailability } from '../temporal/availability.js';
import { StartGate } from '../shared/workflow-starts/start-gate.js';
import { connectTemporalClient } from '../temporal/connection.js';
import type { AppDeps } from './deps.js';

/** Opens every connection the API needs; `close()` releases them in reverse order. */
export async function connectAppDeps(
  config: Config,
  targets: { databaseUrl: string; temporalAddress: string },
  log: (message: string) => void = () => {},
): Promise<AppDeps & { temporal: { connection: NativeConnection }; close(): Promise<void> }> {
  // First: a bad key file fails the start before any connection is opened.
  const secrets = await loadSecretKeyRing(config);
  const db = createDb(targets.databaseUrl, { poolSize: config.DATABASE_POOL_SIZE, applicationName: 'wfapp-api', onConnectionError: (e) => log(`database connection lost: ${e.message}`) });
  const listener = new PgListener(targets.databaseUrl, (error) => log(`database listener: ${error.message}`));
  const settings = new SiteSettingsCache(db, { onInvalid: (key, reason) => log(`site setting ${key} is invalid, using defaults: ${reason}`) });
  settings.follow(listener);
  const runEvents = new RunEventHub();
  runEvents.follow(listener);
  const deployments = new DeploymentCache();
  deployments.follow(listener);
  await listener.start();
  const temporal = await connectTemporalClient(targets.temporalAddress, config.TEMPORAL_NAMESPACE);
  const availability = new TemporalAvailability(temporal.connection, { log });
  const idp = await createIdentityProvider(config);
  const scheduleTokens = await createScheduleTokens(config.DATA_DIR);
  const authenticator = createAuthenticator({ db, idp, scheduleTokens });
  const rateLimiter = createRateLimiter({ redisUrl: config.REDIS_URL, onError: (e) => log(`rate-limit store (Redis): ${e.message}`) });
  return {
    config, db, settings, runEvents, deployments, idp, scheduleTokens, authenticator, rateLimiter, secrets,
    temporal: { client: temporal.client, connection: temporal.connection, availability, gate: new StartGate() },
    async close() {
      availability.close();
      await temporal.close();
      await rateLimiter.close();
      await listener.close();
      await db.destroy();
    },
  };
}
