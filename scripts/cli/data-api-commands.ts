import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { anonKeysOf } from '../../shared/data-api/identity.js';
import { loadSecretKeyRing } from '../../shared/secrets/key-ring.js';
import { defineCommand, type Command } from './command.js';
import { CliError } from './flags.js';

/** The origin the frontend reaches: PUBLIC_BASE_URL, else the running `npm start`'s API, else HOST:PORT. */
function publicOrigin(config: Parameters<Command>[1]['config']): string {
  if (config.PUBLIC_BASE_URL) return new URL(config.PUBLIC_BASE_URL).origin;
  const runtime = path.join(config.DATA_DIR, 'runtime.json');
  if (existsSync(runtime)) {
    const { apiUrl } = JSON.parse(readFileSync(runtime, 'utf8')) as { apiUrl?: string };
    if (apiUrl) return apiUrl;
  }
  const host = config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST;
  return `http://${host}:${config.PORT}`;
}

/** data-api keys: what a frontend needs for createClient(url, anonKey) (CONTRACTS.md "Frontend data access"). */
export const dataApiCommands: Record<string, Command> = {
  'data-api keys': defineCommand({
    summary: "What the frontend's data-platform client needs: the URL and the anon key (docs/data-api.md)",
    prints: '{ url, anonKey }',
    flags: {},
    run: async (_f, ctx) => {
      const { current } = anonKeysOf(await loadSecretKeyRing(ctx.config));
      if (!current) throw new CliError('not_configured', 'SECRETS_KEY is not set: the anon key is derived from it');
      return { url: publicOrigin(ctx.config), anonKey: current };
    },
  }),
};
