import { z } from 'zod';
import { createBinding } from '../../shared/connectors/bindings.js';
import { connectorStatuses, setConnector } from '../../shared/connectors/catalog.js';
import type { Command } from './commands.js';
import { asFlagErrors, positiveIntFlag, readFlags, switchFlag, uuidFlag } from './flags.js';

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

  /** A document's trigger on a connection; publishing the document then needs the connection `active`. */
  'connector-binding create': async (flags, ctx) => {
    const f = readFlags(flags, {
      document: uuidFlag,
      connection: uuidFlag,
      trigger: z.string().trim().min(1).max(100),
      'poll-seconds': positiveIntFlag.optional(),
    });
    const binding = await asFlagErrors(() => createBinding(ctx.db(), {
      documentId: f.document, connectionId: f.connection, trigger: f.trigger, pollSeconds: f['poll-seconds'],
    }));
    return { id: binding.id };
  },
};
