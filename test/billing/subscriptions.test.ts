import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addTeamMember } from '../../shared/identity/service.js';
import { runCli } from '../harness/cli.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

// A team's subscription (CONTRACTS.md "Frontend data access"): `team create --plan` opens it, the
// owner or an admin cancels, resumes and changes the plan through the backend routes; every refusal
// leaves the subscription and the team's plan as they were. Also `credits grant`'s ledger row.
describe('subscriptions: team create --plan and /billing/subscription/*', () => {
  let stack: TestStack;
  let make: ReturnType<typeof credentialFactory>;

  beforeAll(async () => {
    stack = await createTestStack();
    make = credentialFactory(stack);
  }, 60_000);
  afterAll(async () => { await stack?.close(); });

  const cli = (...args: string[]) => runCli(args, stack.env);
  const subscriptionsOf = (teamId: string) => stack.db.selectFrom('subscriptions')
    .select(['id', 'team_id', 'plan_code', 'status', 'cancel_at_period_end', 'current_period_start', 'current_period_end', 'updated_at'])
    .where('team_id', '=', teamId).execute();
  const teamPlan = async (teamId: string) =>
    (await stack.db.selectFrom('teams').select('plan_code').where('id', '=', teamId).executeTakeFirstOrThrow()).plan_code;
  const bearer = async (userId: string) => ({ authorization: `Bearer ${await make.jwt(userId)}` });
  const post = (action: string, body: object, headers: Record<string, string>) =>
    stack.app.inject({ method: 'POST', url: `/billing/subscription/${action}`, headers, payload: body });

  /** A pro team made by the operator CLI, as a real deployment makes one. */
  async function proTeam() {
    const owner = await make.user('owner');
    const made = await cli('team', 'create', '--owner', owner.id, '--name', 'Paying team', '--plan', 'pro');
    expect(made.code, made.stderr).toBe(0);
    return { teamId: made.json!.id as string, ownerId: owner.id };
  }

  it('team create --plan pro opens an active pro subscription; a free team has none', async () => {
    const { teamId } = await proTeam();
    const rows = await subscriptionsOf(teamId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ team_id: teamId, plan_code: 'pro', status: 'active', cancel_at_period_end: false });
    expect(rows[0]!.current_period_end.getTime()).toBeGreaterThan(rows[0]!.current_period_start.getTime());

    const owner = await make.user('free-owner');
    const free = await cli('team', 'create', '--owner', owner.id, '--name', 'Free team');
    expect(free.code, free.stderr).toBe(0);
    expect(await subscriptionsOf(free.json!.id as string)).toEqual([]);
  });

  it('cancel sets cancel_at_period_end (status stays active), resume clears it; each answers the row', async () => {
    const { teamId, ownerId } = await proTeam();
    const [before] = await subscriptionsOf(teamId);

    const canceled = await post('cancel', { teamId }, await bearer(ownerId));
    expect(canceled.statusCode, canceled.body).toBe(200);
    expect(canceled.json()).toEqual({
      subscription: {
        id: before!.id, team_id: teamId, plan_code: 'pro', status: 'active', cancel_at_period_end: true,
        current_period_start: before!.current_period_start.toISOString(), current_period_end: before!.current_period_end.toISOString(),
      },
    });
    expect((await subscriptionsOf(teamId))[0]).toMatchObject({ cancel_at_period_end: true, status: 'active' });
    // Again: nothing more to do, same answer.
    expect((await post('cancel', { teamId }, await bearer(ownerId))).json().subscription.cancel_at_period_end).toBe(true);

    const resumed = await post('resume', { teamId }, await bearer(ownerId));
    expect(resumed.statusCode, resumed.body).toBe(200);
    expect(resumed.json().subscription).toMatchObject({ id: before!.id, cancel_at_period_end: false, status: 'active' });
    expect((await subscriptionsOf(teamId))[0]).toMatchObject({ cancel_at_period_end: false });
  });

  it('change-plan shows the new plan at once and moves the team\'s plan (its limits) with it; a team admin may', async () => {
    const { teamId } = await proTeam();
    const admin = await make.user('admin');
    await addTeamMember(stack.db, { teamId, userId: admin.id, role: 'admin' });

    const changed = await post('change-plan', { teamId, planCode: 'business' }, await bearer(admin.id));
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json().subscription).toMatchObject({ team_id: teamId, plan_code: 'business', status: 'active' });
    expect((await subscriptionsOf(teamId)).map((row) => row.plan_code)).toEqual(['business']);
    expect(await teamPlan(teamId)).toBe('business');
  });

  describe('refusals change nothing', () => {
    async function expectUnchanged(teamId: string, snapshot: Awaited<ReturnType<typeof subscriptionsOf>>, plan: string) {
      expect(await subscriptionsOf(teamId)).toEqual(snapshot);
      expect(await teamPlan(teamId)).toBe(plan);
    }

    it('a member who is not owner or admin: 403 for each action', async () => {
      const { teamId } = await proTeam();
      const member = await make.user('member');
      await addTeamMember(stack.db, { teamId, userId: member.id, role: 'member' });
      const snapshot = await subscriptionsOf(teamId);
      for (const [action, body] of [['cancel', { teamId }], ['resume', { teamId }], ['change-plan', { teamId, planCode: 'business' }]] as const) {
        const res = await post(action, body, await bearer(member.id));
        expect(res.statusCode, `${action}: ${res.body}`).toBe(403);
        expect(res.json().message).toMatch(/owner or admin/);
      }
      await expectUnchanged(teamId, snapshot, 'pro');
    });

    it('another team\'s subscription: 404 exactly like a team that does not exist', async () => {
      const { teamId } = await proTeam();
      const outsider = await make.user('outsider');
      await make.team(outsider.id, 'Own team');
      const snapshot = await subscriptionsOf(teamId);
      const foreign = await post('change-plan', { teamId, planCode: 'business' }, await bearer(outsider.id));
      const missing = await post('change-plan', { teamId: randomUUID(), planCode: 'business' }, await bearer(outsider.id));
      expect(foreign.statusCode).toBe(404);
      expect(foreign.json()).toEqual(missing.json());
      expect((await post('cancel', { teamId }, await bearer(outsider.id))).statusCode).toBe(404);
      await expectUnchanged(teamId, snapshot, 'pro');
    });

    it('a team without a subscription: 404; no row is made', async () => {
      const owner = await make.user('free-owner');
      const team = await make.team(owner.id, 'Free');
      const res = await post('change-plan', { teamId: team.id, planCode: 'business' }, await bearer(owner.id));
      expect(res.statusCode).toBe(404);
      expect(res.json().message).toBe('The team has no subscription');
      expect((await post('cancel', { teamId: team.id }, await bearer(owner.id))).statusCode).toBe(404);
      await expectUnchanged(team.id, [], 'free');
    });

    it('planCode free or unknown, or no teamId: 400', async () => {
      const { teamId, ownerId } = await proTeam();
      const snapshot = await subscriptionsOf(teamId);
      for (const body of [{ teamId, planCode: 'free' }, { teamId, planCode: 'gold' }, { teamId }, { planCode: 'business' }, { teamId: 'not-a-uuid', planCode: 'business' }]) {
        const res = await post('change-plan', body, await bearer(ownerId));
        expect(res.statusCode, JSON.stringify(body)).toBe(400);
      }
      await expectUnchanged(teamId, snapshot, 'pro');
    });

    it('no credential 401; an API key of the team 403 (JWT only)', async () => {
      const { teamId, ownerId } = await proTeam();
      const snapshot = await subscriptionsOf(teamId);
      expect((await post('cancel', { teamId }, {})).statusCode).toBe(401);
      const key = await make.apiKey(teamId, ownerId);
      const res = await post('cancel', { teamId }, { authorization: `Bearer ${key.token}` });
      expect(res.statusCode).toBe(403);
      await expectUnchanged(teamId, snapshot, 'pro');
    });
  });

  it('credits grant (CLI) writes a credit_transactions row and moves credit_balances by the amount', async () => {
    const owner = await make.user('granted');
    const team = await make.team(owner.id);
    for (const amount of ['1500', '250']) {
      const res = await cli('credits', 'grant', '--team', team.id, '--amount', amount);
      expect(res.code, res.stderr).toBe(0);
    }
    const rows = await stack.db.selectFrom('credit_transactions').select(['amount_milli', 'reason']).where('team_id', '=', team.id)
      .orderBy('amount_milli').execute();
    expect(rows).toEqual([{ amount_milli: 250, reason: 'operator_grant' }, { amount_milli: 1500, reason: 'operator_grant' }]);
    const balance = await stack.db.selectFrom('credit_balances').select('balance_milli').where('team_id', '=', team.id).executeTakeFirstOrThrow();
    expect(balance.balance_milli).toBe(1750);
  });
});
