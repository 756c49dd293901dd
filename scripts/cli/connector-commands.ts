import { z } from 'zod';
import { connectorStatuses, setConnector } from '../../shared/connectors/catalog.js';
import type { Client } from '@temporalio/client';
import { POLL_NOW_UPDATE, type PollNowResult } from '../../shared/connectors/contracts.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import { defineCommand, flag, type CliContext, type Command } from './command.js';
import { asFlagErrors, CliError, positiveIntFlag, switchFlag, uuidFlag } from './flags.js';

/** Connector operations (CONTRACTS.md "Connectors"): the catalog's status and breaker, bindings, polling now. */
export const connectorCommands: Record<string, Command> = {
  'connector set': defineCommand({
    summary: "Set a connector service's catalog status and circuit breaker",
    prints: '{ service, status, circuitBroken }',
    flags: {
      service: flag(z.string().trim().min(1).max(100), 'the connector service', 'S'),
      status: flag(z.enum(connectorStatuses), 'its catalog status'),
      'circuit-broken': flag(switchFlag.optional(), 'open (true) or close (false) its circuit breaker', 'true|false'),
    },
    run: (f, ctx) => setConnector(ctx.db(), { service: f.service, status: f.status, circuitBroken: f['circuit-broken'] }),
  }),

  /** A document's trigger on a connection; publishing the document then needs the connection `active`. */
  'connector-binding create': defineCommand({
    summary: "Bind a document's trigger to a connection (polling starts once Temporal answers)",
    prints: '{ id }',
    flags: {
      document: flag(uuidFlag, 'the document', 'DOCUMENT_ID'),
      connection: flag(uuidFlag, 'the connection', 'CONNECTION_ID'),
      trigger: flag(z.string().trim().min(1).max(100), "the connector's trigger", 'T'),
      'poll-seconds': flag(positiveIntFlag.optional(), 'polling interval in seconds', 'SECONDS'),
    },
    run: async (f, ctx) => {
      // Loaded here: both bring Temporal's client, which would slow every other command's start.
      const { createBinding } = await import('../../shared/connectors/bindings.js');
      const { startRecordedWorkflow } = await import('../../shared/workflow-starts/start-path.js');
      const { binding, pollStart } = await asFlagErrors(() => createBinding(ctx.db(), {
        documentId: f.document, connectionId: f.connection, trigger: f.trigger, pollSeconds: f['poll-seconds'],
      }, { taskQueueSuffix: ctx.config.TEMPORAL_TASK_QUEUE_SUFFIX }));
      // Recorded with the binding: when Temporal cannot be reached now, the worker's dispatcher starts it.
      await withTemporal(ctx, async (client) => {
        await startRecordedWorkflow({ db: ctx.db(), temporal: client }, pollStart, 'queue');
      }).catch((error: unknown) => ctx.warn(`polling starts once Temporal answers: ${(error as Error).message}`));
      return { id: binding.id };
    },
  }),

  /** Polls now instead of at the next tick; the polling workflow does it and dispatches what it found. */
  'connector poll': defineCommand({
    summary: 'Poll a connector binding now instead of at its next tick (needs Temporal)',
    prints: '{ newEvents }',
    flags: { binding: flag(uuidFlag, 'the connector binding', 'BINDING_ID') },
    run: async (f, ctx) => {
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
  }),
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
