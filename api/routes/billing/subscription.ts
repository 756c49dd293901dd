import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  cancelSubscription, changeSubscriptionPlan, resumeSubscription, type Subscription,
} from '../../../shared/billing/subscriptions.js';
import { planCodes } from '../../../shared/identity/schemas.js';
import type { AppDeps } from '../../deps.js';
import { principalOf } from '../../plugins/auth.js';

const tags = ['billing'];
const paidPlanCodes = planCodes.filter((plan) => plan !== 'free') as [Exclude<(typeof planCodes)[number], 'free'>, ...Array<Exclude<(typeof planCodes)[number], 'free'>>];

// The row as the data API's `subscriptions` relation shows it, so a client can put it where it
// keeps the rows it read.
const subscriptionView = z.object({
  id: z.string(), team_id: z.string(), plan_code: z.string(), status: z.enum(['active', 'canceled', 'past_due']),
  current_period_start: z.string(), current_period_end: z.string(), cancel_at_period_end: z.boolean(),
});
const answer = z.object({ subscription: subscriptionView });

const view = (row: Subscription) => ({
  subscription: {
    ...row, current_period_start: row.current_period_start.toISOString(), current_period_end: row.current_period_end.toISOString(),
  },
});

const teamBody = z.object({ teamId: z.uuid() });
const common = '404 for a team the caller is not in (as for a missing team) and for a team without a subscription; 403 for a member who is not owner or admin.';

/** Renewal cancel/resume and plan change (CONTRACTS.md "Frontend data access"): the team's owner or admin, signed in. */
export const subscriptionRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  const renewalChanges = [
    ['cancel', cancelSubscription, 'Stop the team\'s subscription from renewing (it stays active until the period ends)'],
    ['resume', resumeSubscription, 'Let the team\'s subscription renew again (undo a cancel before the period ends)'],
  ] as const;
  for (const [action, change, summary] of renewalChanges) {
    app.post(`/billing/subscription/${action}`, {
      config: { access: 'teamAdmin' },
      schema: { tags, summary, description: common, body: teamBody, response: { 200: answer } },
    }, async (request) => view(await change(deps.db, principalOf(request, 'jwt').userId, request.body.teamId)));
  }

  app.post('/billing/subscription/change-plan', {
    config: { access: 'teamAdmin' },
    schema: {
      tags, summary: 'Move the team\'s subscription to another paid plan, at once (the team\'s limits follow)',
      description: `${common} \`free\` is not a plan to change to: cancel instead.`,
      body: teamBody.extend({ planCode: z.enum(paidPlanCodes) }), response: { 200: answer },
    },
  }, async (request) => {
    const { teamId, planCode } = request.body;
    return view(await changeSubscriptionPlan(deps.db, principalOf(request, 'jwt').userId, teamId, planCode));
  });
};
