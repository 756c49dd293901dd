import { z } from 'zod';
import { CLIENT_CONFIG_GROUPS, setClientConfig } from '../../shared/public-config/client-config.js';
import { defineCommand, flag, type Command } from './command.js';
import { jsonFlag } from './flags.js';

/** client-config set: one group of the public client configuration (CONTRACTS.md "Public configuration"). */
export const clientConfigCommands: Record<string, Command> = {
  'client-config set': defineCommand({
    summary: 'Set one group of the public client configuration (the client.<G> row GET /public/client-config serves)',
    prints: '{ group, version }',
    flags: {
      group: flag(z.enum(CLIENT_CONFIG_GROUPS, { message: `expected one of ${CLIENT_CONFIG_GROUPS.join(', ')}` }), `the group: ${CLIENT_CONFIG_GROUPS.join(', ')}`, 'G'),
      value: flag(jsonFlag.pipe(z.record(z.string(), z.unknown(), { message: 'expected a JSON object' })), 'the group as a JSON object', 'JSON'),
    },
    run: (f, ctx) => setClientConfig(ctx.db(), f.group, f.value),
  }),
};
