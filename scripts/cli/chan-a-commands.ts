import { z } from 'zod';
import { parseSafeDomains, setOfficialAccount } from '../../shared/hardware-sales/official-accounts.js';
import { loadSecretKeyRing, SecretsKeyMissingError } from '../../shared/secrets/key-ring.js';
import type { Command } from './command.js';
import { CliError, readFlags } from './flags.js';

/** chan-a account set: the official account an OAuth client id uses for in-app pay (CONTRACTS.md). */
export const chanACommands: Record<string, Command> = {
  'chan-a account set': async (flags, ctx) => {
    const f = readFlags(flags, {
      'client-id': z.string().trim().min(1).max(200),
      'app-id': z.string().trim().regex(/^[A-Za-z0-9_-]{1,64}$/, 'expected the official account AppID (e.g. wx…)'),
      'app-secret': z.string().trim().min(1).max(256),
      'safe-domains': z.string().optional(),
    });
    let safeDomains: string[];
    try {
      safeDomains = parseSafeDomains(f['safe-domains']);
    } catch (error) {
      throw new CliError('invalid_flag', `Invalid --safe-domains: ${(error as Error).message}`);
    }
    const secrets = await loadSecretKeyRing(ctx.config);
    try {
      const account = await setOfficialAccount({ db: ctx.db(), secrets }, {
        clientId: f['client-id'], appId: f['app-id'], appSecret: f['app-secret'], safeDomains,
      });
      return { clientId: account.clientId, appId: account.appId };
    } catch (error) {
      // The secret is stored sealed or not at all.
      if (error instanceof SecretsKeyMissingError) throw new CliError('secrets_key_missing', 'SECRETS_KEY is not set: the AppSecret cannot be stored sealed');
      throw error;
    }
  },
};
