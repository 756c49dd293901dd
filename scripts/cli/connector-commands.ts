import { z } from 'zod';
import { createBinding } from '../../shared/connectors/bindings.js';
import { connectorStatuses, setConnector } from '../../shared/connectors/catalog.js';
import type { Client } from '@temporalio/client';
import { POLL_NOW_UPDATE, type PollNowResult } from '../../shared/connectors/contracts.js';
import { startRecordedWorkflow } from '../../shared/workflow-starts/start-path.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import type { CliContext, Command } from './command.js';
import { asFlagErrors, CliError, positiveIntFlag, readFlags, switchFlag, uuidFlag } from './flags.js';

/** Connector operations (CONTRACTS.md "Connectors"): the catalog's status and breaker, bindings, polling now. */
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
    const { binding, pollStart } = await asFlagErrors(() => createBinding(ctx.db(), {
      documentId: f.document, connectionId: f.connection, trigger: f.trigger, pollSeconds: f['poll-seconds'],
    }, { taskQueueSuffix: ctx.config.TEMPORAL_TASK_QUEUE_SUFFIX }));
    // Recorded with the binding: when Temporal cannot be reached now, the worker's dispatcher starts it.
    await withTemporal(ctx, async (client) => {
      await startRecordedWorkflow({ db: ctx.db(), temporal: client }, pollStart, 'queue');
    }).catch((error: unknown) => ctx.warn(`polling starts once Temporal answers: ${(error as Error).message}`));
    return { id: binding.id };
  },

  /** Polls now instead of at the next tick; the polling workflow does it and dispatches what it found. */
  'connector poll': async (flags, ctx) => {
    const f = readFlags(flags, { binding: uuidFlag });
    const binding = await ctx.db().selectFrom('connector_bindings').select('id').where('id', '=', f.binding).executeTakeFirst();
    if (!binding) throw new CliError('binding_not_found', `No connector binding ${f.binding}`);
    return withTemporal(ctx, async (client) => {
      const { WorkflowNotFoundError } = await import('@temporalio/client');
      try {
        const result = await client.workflow.getHandle(workflowIds.connectorPoll(binding.id)).executeUpdate<PollNowResult, []>(POLL_NOW_UPDATE);
        return { newEvents: result.newEvents };
      } catch (error) {
        const cause = (error as { cause?: unknown }).cause;
        if (error instanceof WorkflowNotFoundError || cause instanceof WorkflowNotFoundError) {
          throw new CliError('polling_not_running', `Binding ${binding.id} is not polling (stopped: disabled, or its connection revoked)`);
        }
        throw error;
      }
    });
  },
};

/** A Temporal client for one command; loaded on demand (gRPC would slow every other command's start). */
async function withTemporal<T>(ctx: CliContext, use: (client: Client) => Promise<T>): Promise<T> {
  const { connectTemporalClient } = await import('../../temporal/connection.js');
  const temporal = await connectTemporalClient(ctx.temporalAddress(), ctx.config.TEMPORAL_NAMESPACE);
  try {
    return await use(temporal.client);
  } finally {
    await temporal.close();
  }
}
