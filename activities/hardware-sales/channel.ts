import { parseAllowList } from '../../shared/outbound-http/ssrf-guard.js';
import { chanAConfigOf, type ChanAConfig } from '../../shared/payment-channels/chan-a/config.js';
import { notifyUrl } from '../../shared/payment-channels/channel-settings.js';
import { createChanAClient, type ChanAClient } from '../../shared/payment-channels/chan-a/client.js';
import { guardedFetch } from '../../shared/payment-channels/guarded-fetch.js';
import type { ActivityDeps } from '../deps.js';

export interface ChanAChannel {
  config: ChanAConfig;
  client: ChanAClient;
  /** Where the channel sends notifications: PUBLIC_BASE_URL + path. */
  notifyUrl(path: string): string;
}

/**
 * chan_a as the saga's activities reach it, or null when it is not configured. Built once per
 * worker; every request goes through the SSRF guard with the same allow list as `http` blocks.
 */
export function chanAChannel(deps: ActivityDeps): () => ChanAChannel | null {
  let built: ChanAChannel | null | undefined;
  return () => {
    if (built !== undefined) return built;
    const config = chanAConfigOf(deps.config);
    built = config && {
      config,
      client: createChanAClient(config, { fetch: guardedFetch(async () => parseAllowList(await deps.settings.get('http_block.allow_hosts'))) }),
      notifyUrl: (path) => notifyUrl(deps.config, path),
    };
    return built;
  };
}
