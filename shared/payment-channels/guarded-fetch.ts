import { vetUrl, type AllowRule } from '../outbound-http/ssrf-guard.js';

/**
 * `fetch` for requests workflows make to payment channels: every URL goes through the SSRF guard
 * first (the channel's configured host must be public, or let through by `http_block.allow_hosts`,
 * as tests do for their 127.0.0.1 channel servers), and redirects are refused rather than followed
 * to a host nobody vetted. The raw response is returned untouched: channel signatures cover its bytes.
 */
export function guardedFetch(rules: () => Promise<readonly AllowRule[]>): typeof fetch {
  return async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    await vetUrl(url, await rules());
    return fetch(input, { ...init, redirect: 'error' });
  };
}
