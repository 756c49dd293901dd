import { sql } from 'kysely';
import type { Database } from '../db/client.js';
import type { PlanCode } from '../db/types.js';

// Kysely queries only: who may change a subscription and what each change means live in subscriptions.ts.

/** The columns the data API exposes for `subscriptions` (CONTRACTS.md), the shape the routes answer with. */
const columns = ['id', 'team_id', 'plan_code', 'status', 'current_period_start', 'current_period_end', 'cancel_at_period_end'] as const;

export const insertActiveSubscription = (db: Database, row: { team_id: string; plan_code: PlanCode }) =>
  db.insertInto('subscriptions').values({ ...row, status: 'active' }).returning(columns).executeTakeFirstOrThrow();

/** The team's current subscription (at most one is not canceled), locked until the transaction ends. */
export const lockLiveSubscription = (db: Database, teamId: string) =>
  db.selectFrom('subscriptions').select(columns).where('team_id', '=', teamId).where('status', '<>', 'canceled')
    .forUpdate().executeTakeFirst();

export const updateSubscription = (db: Database, id: string, change: { cancel_at_period_end?: boolean; plan_code?: PlanCode }) =>
  db.updateTable('subscriptions').set({ ...change, updated_at: sql<Date>`now()` as never }).where('id', '=', id)
    .returning(columns).executeTakeFirstOrThrow();

/** The plan that drives the team's limits follows its subscription's. */
export const setTeamPlan = (db: Database, teamId: string, planCode: PlanCode) =>
  db.updateTable('teams').set({ plan_code: planCode, updated_at: sql<Date>`now()` as never }).where('id', '=', teamId).execute();
