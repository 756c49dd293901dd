import { z } from 'zod';
import { grantCredits, readCreditBalance } from '../../shared/billing/service.js';
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
import { defineCommand, flag, type Command } from './command.js';
import { documentCommands } from './document-commands.js';
import { CliError, jsonFlag, positiveIntFlag, switchFlag, uuidFlag } from './flags.js';
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
 * The operator CLI (CONTRACTS.md). Each command prints one JSON object; later capabilities add theirs
 * in a *-commands.ts file gathered below. `--help` and the README's table list them in this order.
 * Heavy modules are imported inside the command that needs them, to keep every start fast.
 */
const platformCommands: Record<string, Command> = {
  'user create': defineCommand({
    summary: 'Create a user',
    prints: '{ id, email }',
    flags: {
      email: flag(emailSchema, 'sign-in email (stored lower-case)', 'E'),
      name: flag(displayNameSchema.optional(), 'display name', 'N'),
      phone: flag(phoneSchema.optional(), 'phone in E.164', '+E164'),
    },
    run: async (f, ctx) => {
      const user = await createUser(ctx.db(), f);
      return { id: user.id, email: user.email };
    },
  }),

  // Platform administrators review OAuth apps, manage prices and anyone's public objects.
  'user set-admin': defineCommand({
    summary: "Make a user a platform administrator or take it back (they review OAuth apps, manage prices and anyone's public objects)",
    prints: '{ userId, isPlatformAdmin }',
    flags: { user: flag(uuidFlag, 'the user', 'USER_ID'), admin: flag(switchFlag, 'administrator or not', 'true|false') },
    run: (f, ctx) => setPlatformAdmin(ctx.db(), f.user, f.admin),
  }),

  'team create': defineCommand({
    summary: 'Create a team owned by a user (a paid plan opens an active subscription)',
    prints: '{ id, slug, name, planCode }',
    flags: {
      owner: flag(uuidFlag, 'the owning user', 'USER_ID'),
      name: flag(displayNameSchema, 'team name', 'N'),
      plan: flag(planCodeSchema.optional(), 'plan (default free)'),
    },
    run: async (f, ctx) => {
      // A paid plan comes with an active subscription to it (CONTRACTS.md "Frontend data access").
      const team = await createTeam(ctx.db(), { ownerId: f.owner, name: f.name, plan: f.plan }, openSubscription);
      return { id: team.id, slug: team.slug, name: team.name, planCode: team.plan_code };
    },
  }),

  'team add-member': defineCommand({
    summary: 'Add a user to a team with a role',
    prints: '{ teamId, userId, role }',
    flags: { team: flag(uuidFlag, 'the team', 'TEAM_ID'), user: flag(uuidFlag, 'the user to add', 'USER_ID'), role: flag(teamRoleSchema, 'their role') },
    run: async (f, ctx) => {
      const member = await addTeamMember(ctx.db(), { teamId: f.team, userId: f.user, role: f.role });
      return { teamId: member.team_id, userId: member.user_id, role: member.role };
    },
  }),

  'project create': defineCommand({
    summary: 'Create a project in a team',
    prints: '{ id, slug, teamId }',
    flags: { team: flag(uuidFlag, 'the team', 'TEAM_ID'), name: flag(displayNameSchema, 'project name', 'N') },
    run: async (f, ctx) => {
      const project = await createProject(ctx.db(), { teamId: f.team, name: f.name });
      return { id: project.id, slug: project.slug, teamId: project.team_id };
    },
  }),

  'jwt issue': defineCommand({
    summary: "Issue an identity-provider JWT for a user (the service's own IdP)",
    prints: '{ token }',
    flags: {
      user: flag(uuidFlag, 'the user', 'USER_ID'),
      ttl: flag(positiveIntFlag.pipe(z.number().max(30 * 24 * 3600)).optional(), 'lifetime in seconds (default 3600, at most 30 days)', 'SECONDS'),
    },
    run: async (f, ctx) => {
      if (!(await findUserById(ctx.db(), f.user))) throw notFound(`User ${f.user}`);
      const { createIdentityProvider } = await import('../../shared/credentials/identity-provider.js');
      const idp = await createIdentityProvider(ctx.config);
      return { token: await idp.issue(f.user, f.ttl ?? 3600) };
    },
  }),

  'credits grant': defineCommand({
    summary: 'Add milli-credits to a team (a ledger row and the balance, in one transaction)',
    prints: '{ teamId, balance }',
    flags: { team: flag(uuidFlag, 'the team', 'TEAM_ID'), amount: flag(positiveIntFlag, 'milli-credits to add (1 credit = 1000)', 'MILLI_CREDITS') },
    run: (f, ctx) => grantCredits(ctx.db(), { teamId: f.team, amountMilli: f.amount }),
  }),

  'credits balance': defineCommand({
    summary: "A team's credit balance, in milli-credits (the balance credits grant prints)",
    prints: '{ teamId, balance }',
    flags: { team: flag(uuidFlag, 'the team', 'TEAM_ID') },
    run: async (f, ctx) => {
      const balance = await readCreditBalance(ctx.db(), f.team);
      if (!balance) throw new CliError('team_not_found', `Team ${f.team} does not exist`);
      return balance;
    },
  }),

  'settings set': defineCommand({
    summary: 'Store a site setting; running processes see it within moments (billing.rules writes the billing_rules rows)',
    prints: '{ key, value }',
    flags: {
      key: flag(z.string().trim().min(1).max(200), 'setting key, e.g. run.max_timeout_seconds', 'K'),
      value: flag(jsonFlag, 'its JSON value (a value its schema refuses is not stored)', 'JSON'),
    },
    run: async (f, ctx) => {
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
  }),

  'api-key create': defineCommand({
    summary: "Create a team API key (the token is shown only here)",
    prints: '{ id, token }',
    flags: {
      team: flag(uuidFlag, 'the team', 'TEAM_ID'),
      user: flag(uuidFlag, 'the member creating it', 'USER_ID'),
      name: flag(displayNameSchema, 'key name', 'N'),
      'limit-credits': flag(positiveIntFlag.optional(), 'spending limit in milli-credits', 'MILLI'),
    },
    run: (f, ctx) => createApiKey(ctx.db(), { teamId: f.team, createdBy: f.user, name: f.name, limitCredits: f['limit-credits'] ?? null }),
  }),

  /** A token that runs the schedule's deployment as that schedule (CONTRACTS.md); team and deployment come from the row. */
  'schedule-token issue': defineCommand({
    summary: "Issue a token that runs a schedule's deployment as that schedule (team and deployment from the schedule row)",
    prints: '{ token }',
    flags: {
      schedule: flag(uuidFlag, 'the schedule', 'SCHEDULE_ID'),
      ttl: flag(positiveIntFlag.pipe(z.number().max(24 * 3600)).optional(), 'lifetime in seconds (default 3600, at most a day)', 'SECONDS'),
    },
    run: async (f, ctx) => {
      const row = await ctx.db().selectFrom('schedules').select(['id', 'team_id', 'deployment_id'])
        .where('id', '=', f.schedule).where('deleted_at', 'is', null).executeTakeFirst();
      if (!row) throw new CliError('not_found', `Schedule ${f.schedule} does not exist`);
      if (!row.deployment_id) throw new CliError('no_deployment', `Schedule ${f.schedule} has no deployment_id`);
      const { createScheduleTokens } = await import('../../shared/credentials/schedule-tokens.js');
      const tokens = await createScheduleTokens(ctx.config.DATA_DIR);
      return { token: await tokens.issue({ scheduleId: row.id, teamId: row.team_id, deploymentId: row.deployment_id }, f.ttl ?? 3600) };
    },
  }),

  /** Runs the platform probe workflow end to end: Temporal → worker → activity → PostgreSQL. */
  doctor: defineCommand({
    summary: 'Run a probe workflow through Temporal, a worker and PostgreSQL',
    prints: '{ ok, probeId, recordedAt, roundTripMs }',
    flags: {},
    run: async (_f, ctx) => {
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
  }),
};

export const commands: Record<string, Command> = {
  ...platformCommands,
  ...agentCommands,
  ...oauthCommands,
  ...documentCommands,
  ...releaseCommands,
  ...hardwareSalesCommands,
  ...orderCommands,
  ...smsCommands,
  ...chanACommands,
  ...clientConfigCommands,
  ...assetCommands,
  ...firmwareCommands,
  ...deviceCommands,
  ...priceCommands,
  ...connectorCommands,
  ...graphCommands,
  ...dataApiCommands,
};
