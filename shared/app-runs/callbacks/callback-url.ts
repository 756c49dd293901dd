import { AppError } from '../../errors.js';
import { HostResolutionError, InvalidUrlError, SsrfBlockedError, parseAllowList, vetUrl } from '../../outbound-http/ssrf-guard.js';
import type { SiteSettingsCache } from '../../site-settings/cache.js';
import { DEFAULT_CALLBACK_EVENTS, type CallbackEventType, type RunCallback } from './schemas.js';

/**
 * A callback as the run will carry it, or 400 `invalid_callback_url` when the outbound rules of
 * `http` blocks refuse its URL (the one SSRF guard, with `http_block.allow_hosts`). Checked at
 * admission, before anything is charged; the delivery vets it again on every attempt, since a name
 * may resolve elsewhere later.
 */
export async function vetCallback(settings: Pick<SiteSettingsCache, 'get'>, callback: { url: string; events?: CallbackEventType[] }): Promise<RunCallback> {
  const rules = parseAllowList(await settings.get('http_block.allow_hosts'));
  try {
    const { url } = await vetUrl(callback.url, rules);
    return { url: url.href, events: [...new Set(callback.events ?? DEFAULT_CALLBACK_EVENTS)] };
  } catch (error) {
    if (error instanceof SsrfBlockedError || error instanceof InvalidUrlError || error instanceof HostResolutionError) {
      throw new AppError(400, 'invalid_callback_url', `callback.url is refused: ${error.message}`);
    }
    throw error;
  }
}
