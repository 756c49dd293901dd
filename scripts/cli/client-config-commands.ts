import { z } from 'zod';
import { CLIENT_CONFIG_GROUPS, setClientConfig } from '../../shared/public-config/client-config.js';
import type { Command } from './command.js';
import { jsonFlag, readFlags } from './flags.js';

/** client-config set: one group of the public client configuration (CONTRACTS.md "Public configuration"). */
export const clientConfigCommands: Record<string, Command> = {
  'client-config set': async (flags, ctx) => {
    const f = readFlags(flags, {
      group: z.enum(CLIENT_CONFIG_GROUPS, { message: `expected one of ${CLIENT_CONFIG_GROUPS.join(', ')}` }),
      value: jsonFlag.pipe(z.record(z.string(), z.unknown(), { message: 'expected a JSON object' })),
    });
    return setClientConfig(ctx.db(), f.group, f.value);
  },
};
