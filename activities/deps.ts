import type { Config } from '../shared/config.js';
import type { ChanAEnv } from '../shared/payment-channels/chan-a/config.js';

type ChanAEnvKey = keyof ChanAEnv;
import type { Database } from '../shared/db/client.js';
import type { SecretKeyRing } from '../shared/secrets/key-ring.js';
import type { SiteSettingsCache } from '../shared/site-settings/cache.js';

/** What activities may touch. Tests pass real instances; nothing is module-mocked. */
export interface ActivityDeps {
  db: Database;
  settings: SiteSettingsCache;
  /** The default model provider of `llm` blocks; DATA_DIR holds uploaded files (PDF inputs); payment channels. */
  config: Pick<Config, 'LLM_BASE_URL' | 'LLM_API_KEY' | 'DATA_DIR' | 'PUBLIC_BASE_URL' | 'INTERNAL_API_URL' | 'PORT' | ChanAEnvKey>;
  /** Opens team LLM provider keys (shared/llm-providers); the decrypted key never leaves the activity. */
  secrets: SecretKeyRing;
}
