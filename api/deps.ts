import type { Client } from '@temporalio/client';
import type { TemporalAvailability } from '../temporal/availability.js';
import type { TemporalHealthConnection } from '../temporal/connection.js';
import type { Config } from '../shared/config.js';
import type { Database } from '../shared/db/client.js';
import type { Authenticator } from '../shared/credentials/authenticate.js';
import type { IdentityProvider } from '../shared/credentials/identity-provider.js';
import type { ScheduleTokens } from '../shared/credentials/schedule-tokens.js';
import type { RunEventHub } from '../shared/app-runs/event-log.js';
import type { DeploymentCache } from '../shared/documents/deployment-cache.js';
import type { SiteSettingsCache } from '../shared/site-settings/cache.js';
import type { RateLimiter } from '../shared/rate-limit/rate-limiter.js';
import type { SecretKeyRing } from '../shared/secrets/key-ring.js';
import type { StartGate } from '../shared/workflow-starts/start-gate.js';
import type { StartPathDeps } from '../shared/workflow-starts/start-path.js';

/** Everything the API needs from outside; `api/main.ts` builds it, tests build it with real parts. */
export interface AppDeps {
  config: Config;
  db: Database;
  /**
   * `availability` tells whether Temporal answered lately, so requests that need it fail fast during
   * an outage; `gate` bounds the workflow starts this process has in flight.
   */
  temporal: { client: Client; connection: TemporalHealthConnection; availability: TemporalAvailability; gate: StartGate };
  settings: SiteSettingsCache;
  runEvents: RunEventHub;
  /** The live deployments of documents, as the run endpoints look them up (evicted by NOTIFY). */
  deployments: DeploymentCache;
  idp: IdentityProvider;
  scheduleTokens: ScheduleTokens;
  authenticator: Authenticator;
  /** Per-key call budgets (webhook triggers, release gateway): shared through Redis when REDIS_URL is set. */
  rateLimiter: RateLimiter;
  /** Seals secrets at rest (team LLM provider keys): SECRETS_KEY, or the development key in DATA_DIR. */
  secrets: SecretKeyRing;
}

/** What the start path (shared/workflow-starts/start-path.ts) takes from the API's deps. */
export const startPathDeps = (deps: Pick<AppDeps, 'db' | 'temporal'>): StartPathDeps => ({
  db: deps.db, temporal: deps.temporal.client, availability: deps.temporal.availability, gate: deps.temporal.gate,
});
