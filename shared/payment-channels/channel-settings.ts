import type { Config } from '../config.js';

// What every payment channel's configuration shares: keys parsed once per configuration object
// (PEM parsing is not for every request), and where the channels send their notifications.

/** `read(env)` once per `env` object: the result (null = not configured) is kept with it. */
export function parsedOncePer<Env extends object, T>(read: (env: Env) => T): (env: Env) => T {
  const parsed = new WeakMap<Env, T>();
  return (env) => {
    if (!parsed.has(env)) parsed.set(env, read(env));
    return parsed.get(env) as T;
  };
}

/** The public origin a channel's `notify_url` is built on, when `PUBLIC_BASE_URL` is unset (development). */
const DEVELOPMENT_ORIGIN = 'http://127.0.0.1:3000';

/** `PUBLIC_BASE_URL` + `path`: where a channel sends its notifications. */
export function notifyUrl(config: Pick<Config, 'PUBLIC_BASE_URL'>, path: string): string {
  return `${(config.PUBLIC_BASE_URL ?? DEVELOPMENT_ORIGIN).replace(/\/+$/, '')}${path}`;
}
