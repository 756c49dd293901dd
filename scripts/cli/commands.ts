import { z } from 'zod';
import { grantCredits } from '../../shared/billing/service.js';
import { openSubscription } from '../../shared/billing/subscriptions.js';
import { createApiKey } from '../../shared/credentials/api-keys.js';
import { findUserById } from '../../shared/identity/repository.js';
import { displayNameSchema, emailSchema, phoneSchema, planCodeSchema, teamRoleSchema } from '../../shared/identity/schemas.js';
import { addTeamMember, createProject, createTeam, createUser, setPlatformAdmin } from '../../shared/identity/service.js';
import { notFound } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { isKnownSiteSetting, resolveSiteSetting } from '../../shared/site-settings/schemas.js';
import { taskQueueName } from '../../temporal/task-queues.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import { agentCommands } from './agent-commands.js';
import type { Command } from './command.js';
import { documentCommands } from './document-commands.js';
import { CliError, jsonFlag, positiveIntFlag, readFlags, switchFlag, uuidFlag } from './flags.js';
import { oauthCommands } from './oauth-commands.js';
import { releaseCommands } from './release-commands.js';
import { hardwareSalesCommands } from './hardware-sales-commands.js';
import { orderCommands } from './order-commands.js';
import { chanACommands } from './chan-a-commands.js';
import { smsCommands } from './sms-commands.js';
import { clientConfigCommands } from './client-config-commands.js';
import { assetCommands } from './asset-commands.js';
import { firmwareCommands } from './firmware-commands.js';
import { deviceCommands } from './device-commands.js';
import { priceCommands } from './price-commands.js';
import { connectorCommands } from './connector-commands.js';
import { graphCommands } from './graph-commands.js';
import { dataApiCommands } from './data-api-commands.js';

export type { CliContext, Command } from './command.js';

/**
 * The operator CLI (CONTRACTS.md). Each command prints one JSON object; later capabilities add theirs here.
 * Heavy modules are imported inside the command that needs them, to keep every start fast.
 */
export const commands: Record<string, Command> = {
  ...agentCommands,
  ...oauthCommands,
  ...documentCommands,
  ...releaseCommands,
  ...hardwareSalesCommands,
  ...smsCommands,
  ...orderCommands,
  ...chanACommands,
  ...clientConfigCommands,
  ...assetCommands,
  ...firmwareCommands,
  ...deviceCommands,
  ...priceCommands,
  ...connectorCommands,
  ...graphCommands,
  ...dataApiCommands,

  'user create': async (flags, ctx) => {
    const f = readFlags(flags, { email: emailSchema, name: displayNameSchema.optional(), phone: phoneSchema.optional() });
    const user = await createUser(ctx.db(), f);
    return { id: user.id, email: user.email };
  },

  // Platform administrators review OAuth apps, manage prices and anyone's public objects.
  'user set-admin': async (flags, ctx) => {
    const f = readFlags(flags, { user: uuidFlag, admin: switchFlag });
    return setPlatformAdmin(ctx.db(), f.user, f.admin);
  },

  'team create': async (flags, ctx) => {
    const f = readFlags(flags, { owner: uuidFlag, name: displayNameSchema, plan: planCodeSchema.optional() });
    // A paid plan comes with an active subscription to it (CONTRACTS.md "Frontend data access").
    const team = await createTeam(ctx.db(), { ownerId: f.owner, name: f.name, plan: f.plan }, openSubscription);
    return { id: team.id, slug: team.slug, name: team.name, planCode: team.plan_code };
  },

  'team add-member': async (flags, ctx) => {
    const f = readFlags(flags, { team: uuidFlag, user: uuidFlag, role: teamRoleSchema });
    const member = await addTeamMember(ctx.db(), { teamId: f.team, userId: f.user, role: f.role });
    return { teamId: member.team_id, userId: member.user_id, role: member.role };
  },

  'project create': async (flags, ctx) => {
    const f = readFlags(flags, { team: uuidFlag, name: displayNameSchema });
    const project = await createProject(ctx.db(), { teamId: f.team, name: f.name });
    return { id: project.id, slug: project.slug, teamId: project.team_id };
  },

  'jwt issue': async (flags, ctx) => {
    const f = readFlags(flags, { user: uuidFlag, ttl: positiveIntFlag.pipe(z.number().max(30 * 24 * 3600)).optional() });
    if (!(await findUserById(ctx.db(), f.user))) throw notFound(`User ${f.user}`);
    const { createIdentityProvider } = await import('../../shared/credentials/identity-provider.js');
    const idp = await createIdentityProvider(ctx.config);
    return { token: await idp.issue(f.user, f.ttl ?? 3600) };
  },

  'credits grant': async (flags, ctx) => {
    const f = readFlags(flags, { team: uuidFlag, amount: positiveIntFlag });
    return grantCredits(ctx.db(), { teamId: f.team, amountMilli: f.amount });
  },

  'settings set': async (flags, ctx) => {
    const f = readFlags(flags, { key: z.string().trim().min(1).max(200), value: jsonFlag });
    if (isKnownSiteSetting(f.key)) {
      // Refused, not stored: readers would silently use the defaults instead (an operator who set a
      // 2-second code lifetime would get 300 s and never know).
      resolveSiteSetting(f.key, f.value, (key, reason) => { throw new CliError('invalid_value', `Invalid --value for ${key}: ${reason}`); });
    }
    if (f.key === 'billing.rules') {
      // The prices are rows of billing_rules now (docs/billing.md "Price rules"): the value becomes them.
      const { BillingRuleError, replaceBillingRules } = await import('../../shared/billing/billing-rules.js');
      const effective = await replaceBillingRules(ctx.db(), f.value).catch((error: unknown) => {
        throw error instanceof BillingRuleError ? new CliError('invalid_value', `Invalid --value for billing.rules: ${error.message}`) : error;
      });
      return { key: f.key, value: f.value, table: 'billing_rules', effective };
    }
    await upsertSiteSetting(ctx.db(), f.key, f.value);
    return { key: f.key, value: f.value };
  },

  'api-key create': async (flags, ctx) => {
    const f = readFlags(flags, { team: uuidFlag, user: uuidFlag, name: displayNameSchema, 'limit-credits': positiveIntFlag.optional() });
    return createApiKey(ctx.db(), { teamId: f.team, createdBy: f.user, name: f.name, limitCredits: f['limit-credits'] ?? null });
  },

  /**
   * A schedule token for running a deployment as a schedule. Until schedules are stored (the
   * schedules issue), the team and deployment are given as flags; then they will come from the row.
   */
  /** A token that runs the schedule's deployment as that schedule (CONTRACTS.md); team and deployment come from the row. */
  'schedule-token issue': async (flags, ctx) => {
    const f = readFlags(flags, { schedule: uuidFlag, ttl: positiveIntFlag.pipe(z.number().max(24 * 3600)).optional() });
    const row = await ctx.db().selectFrom('schedules').select(['id', 'team_id', 'deployment_id'])
      .where('id', '=', f.schedule).where('deleted_at', 'is', null).executeTakeFirst();
    if (!row) throw new CliError('not_found', `Schedule ${f.schedule} does not exist`);
    if (!row.deployment_id) throw new CliError('no_deployment', `Schedule ${f.schedule} has no deployment_id`);
    const { createScheduleTokens } = await import('../../shared/credentials/schedule-tokens.js');
    const tokens = await createScheduleTokens(ctx.config.DATA_DIR);
    return { token: await tokens.issue({ scheduleId: row.id, teamId: row.team_id, deploymentId: row.deployment_id }, f.ttl ?? 3600) };
  },

  /** Runs the platform probe workflow end to end: Temporal → worker → activity → PostgreSQL. */
  doctor: async (flags, ctx) => {
    readFlags(flags, {});
    // Loaded on demand: the Temporal client (gRPC, protobufs) would double every other command's start time.
    const { connectTemporalClient } = await import('../../temporal/connection.js');
    const { PLATFORM_TEAM_ID, workflowSearchAttributes } = await import('../../temporal/search-attributes.js');
    const temporal = await connectTemporalClient(ctx.temporalAddress(), ctx.config.TEMPORAL_NAMESPACE);
    try {
      const probeId = newId();
      const started = Date.now();
      const result = await temporal.client.workflow.execute('platformProbeWorkflow', {
        taskQueue: taskQueueName('platform', ctx.config.TEMPORAL_TASK_QUEUE_SUFFIX),
        workflowId: workflowIds.platformProbe(probeId),
        args: [{ probeId, note: 'cli doctor' }],
        workflowExecutionTimeout: '30 seconds',
        // Operators list the service's own executions with WfTeamId = 'platform'.
        typedSearchAttributes: workflowSearchAttributes({ teamId: PLATFORM_TEAM_ID, triggerSource: 'doctor' }),
        staticSummary: 'Platform probe (cli doctor)',
      });
      return { ok: true, ...(result as object), roundTripMs: Date.now() - started };
    } catch (error) {
      throw new CliError('probe_failed', `The probe workflow did not complete (is a worker running?): ${(error as Error).message}`);
    } finally {
      await temporal.close();
    }
  },
};
