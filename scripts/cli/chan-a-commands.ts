import { z } from 'zod';
import { parseSafeDomains, setOfficialAccount } from '../../shared/hardware-sales/official-accounts.js';
import { loadSecretKeyRing, SecretsKeyMissingError } from '../../shared/secrets/key-ring.js';
import { defineCommand, flag, type Command } from './command.js';
import { CliError } from './flags.js';

/** chan-a account set: the official account an OAuth client id uses for in-app pay (CONTRACTS.md). */
export const chanACommands: Record<string, Command> = {
  'chan-a account set': defineCommand({
    summary: 'Set the official account an OAuth client uses for in-app pay and the JS-SDK signature',
    prints: '{ clientId, appId }',
    flags: {
      'client-id': flag(z.string().trim().min(1).max(200), 'the OAuth client id', 'CLIENT_ID'),
      'app-id': flag(z.string().trim().regex(/^[A-Za-z0-9_-]{1,64}$/, 'expected the official account AppID (e.g. wx…)'), 'the official account AppID', 'APP_ID'),
      'app-secret': flag(z.string().trim().min(1).max(256), 'its AppSecret (stored sealed; needs SECRETS_KEY)', 'S'),
      'safe-domains': flag(z.string().optional(), 'comma list of JS-SDK safe domains', 'a,b'),
    },
    run: async (f, ctx) => {
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
  }),
};
