import { z } from 'zod';
import { connectorStatuses, setConnector } from '../../shared/connectors/catalog.js';
import type { Command } from './commands.js';
import { readFlags, switchFlag } from './flags.js';

/** connector set: approve, reject or hold a connector, and trip or reset its circuit breaker (CONTRACTS.md "Connectors"). */
export const connectorCommands: Record<string, Command> = {
  'connector set': async (flags, ctx) => {
    const f = readFlags(flags, {
      service: z.string().trim().min(1).max(100),
      status: z.enum(connectorStatuses),
      'circuit-broken': switchFlag.optional(),
    });
    return setConnector(ctx.db(), { service: f.service, status: f.status, circuitBroken: f['circuit-broken'] });
  },
};
