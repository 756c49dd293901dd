import { requireTeamRole } from '../access/service.js';
import type { Database } from '../db/client.js';
import type { PlanCode } from '../db/types.js';
import { AppError } from '../errors.js';
import { insertActiveSubscription, lockLiveSubscription, setTeamPlan, updateSubscription } from './subscriptions-repository.js';

// A team's subscription (CONTRACTS.md "Frontend data access", docs/billing.md "Subscriptions"):
// the frontend reads the row through the data API and changes it only through these functions,
// as the team's owner or admin. `teams.plan_code` drives the limits, so it changes with the
// subscription's plan in the same transaction.

export type Subscription = Awaited<ReturnType<typeof insertActiveSubscription>>;

/** The plans a subscription can be on: every plan but `free`, which is having none. */
export type PaidPlanCode = Exclude<PlanCode, 'free'>;
export const isPaidPlan = (plan: PlanCode): plan is PaidPlanCode => plan !== 'free';

/** A new team on a paid plan starts with an active subscription to it (`team create --plan`). */
export async function openSubscription(trx: Database, team: { id: string; plan_code: PlanCode }): Promise<Subscription | null> {
  if (!isPaidPlan(team.plan_code)) return null;
  return insertActiveSubscription(trx, { team_id: team.id, plan_code: team.plan_code });
}

const noSubscription = () => new AppError(404, 'not_found', 'The team has no subscription');

/**
 * Runs `change` on the team's current subscription, locked, as one transaction. Someone who is not
 * in the team gets 404 like a missing team; a member who is not owner or admin 403.
 */
async function changeSubscription(
  db: Database, userId: string, teamId: string, action: string,
  change: (trx: Database, current: Subscription) => Promise<Subscription>,
): Promise<Subscription> {
  await requireTeamRole(db, teamId, userId, ['owner', 'admin'], action);
  return db.transaction().execute(async (trx) => {
    const current = await lockLiveSubscription(trx, teamId);
    if (!current) throw noSubscription();
    return change(trx, current);
  });
}

/** Renewal stops: the subscription stays active until the end of the period it is in. */
export const cancelSubscription = (db: Database, userId: string, teamId: string) =>
  changeSubscription(db, userId, teamId, 'cancel the subscription', (trx, current) =>
    current.cancel_at_period_end ? Promise.resolve(current) : updateSubscription(trx, current.id, { cancel_at_period_end: true }));

/** Renewal goes on again (undoes a cancel that has not taken effect yet). */
export const resumeSubscription = (db: Database, userId: string, teamId: string) =>
  changeSubscription(db, userId, teamId, 'resume the subscription', (trx, current) =>
    current.cancel_at_period_end ? updateSubscription(trx, current.id, { cancel_at_period_end: false }) : Promise.resolve(current));

/** The new plan applies at once, to the subscription and to the team's limits. */
export const changeSubscriptionPlan = (db: Database, userId: string, teamId: string, planCode: PaidPlanCode) =>
  changeSubscription(db, userId, teamId, 'change the plan', async (trx, current) => {
    if (current.plan_code === planCode) return current;
    const changed = await updateSubscription(trx, current.id, { plan_code: planCode });
    await setTeamPlan(trx, teamId, planCode);
    return changed;
  });
