import type { AddressInfo } from 'node:net';
import { createClient } from '@supabase/supabase-js';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Graph } from '../../shared/documents/graph.js';
import { BillingRulesCache, currentBillingRules, validateBillingRule } from '../../shared/billing/billing-rules.js';
import { anonKeysOf } from '../../shared/data-api/identity.js';
import { publishDirect } from '../harness/apps.js';
import { runCli } from '../harness/cli.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { until } from '../harness/until.js';
import WebSocket from 'ws';

// billing_rules is the source of the run prices (docs/billing.md "Price rules"): a row written
// anywhere (here plain SQL, as a data-API write or psql would) reaches the running API through the
// table's NOTIFY, so the next run costs the new price without a restart; bad keys and values are
// refused by validateBillingRule (the data API and the CLI) and by the table itself.
describe('billing_rules drives pricing', () => {
  let stack: TestStack;
  let make: ReturnType<typeof credentialFactory>;
  const plain: Graph = { blocks: [{ id: 'o', type: 'output', name: 'o', config: { value: 'plain' } }], edges: [] };

  beforeAll(async () => {
    stack = await createTestStack();
    await stack.startWorker();
    make = credentialFactory(stack);
  }, 60_000);
  afterAll(async () => { await stack?.close(); });

  const liveRules = () => stack.db.selectFrom('billing_rules').select(['rule_key', 'value', 'deleted_at']).orderBy('created_at').execute();
  const runCharges = (teamId: string) => stack.db.selectFrom('credit_transactions').select('amount_milli')
    .where('team_id', '=', teamId).where('reason', '=', 'run').orderBy('created_at').execute();

  /** Runs the plain app once through the public run route, paid by the tenant's API key. */
  async function runOnce(who: { teamId: string; apiKey: string; deploymentId: string }) {
    const res = await stack.app.inject({
      method: 'POST', url: `/api/released-app/${who.deploymentId}/run`, headers: { authorization: `Bearer ${who.apiKey}` },
      payload: { inputs: {}, stream: false },
    });
    expect(res.statusCode, res.body).toBe(200);
  }

  it('a row change changes the cost of the next run, with no restart and no manual cache drop', async () => {
    const { team, apiKey } = await make.fundedTenant(100_000);
    const { deploymentId } = await publishDirect(stack.db, plain, { teamId: team.id });
    const who = { teamId: team.id, apiKey, deploymentId };

    await runOnce(who); // the default price (no row), and the rules are now cached
    await stack.db.insertInto('billing_rules').values({ rule_key: 'runBaseMilli', value: JSON.stringify(37) }).execute();
    // Only the NOTIFY can drop the cached price list (its TTL is minutes).
    await until(async () => (await currentBillingRules(stack.deps)).runBaseMilli === 37, 5000, 'the NOTIFY of billing_rules');
    await runOnce(who);
    await stack.db.updateTable('billing_rules').set({ value: JSON.stringify(5) }).where('rule_key', '=', 'runBaseMilli').where('deleted_at', 'is', null).execute();
    await until(async () => (await currentBillingRules(stack.deps)).runBaseMilli === 5, 5000, 'the NOTIFY of the update');
    await runOnce(who);
    // Soft-deleted: the row no longer counts, the default is back.
    await stack.db.updateTable('billing_rules').set({ deleted_at: sql<Date>`now()` as never }).where('rule_key', '=', 'runBaseMilli').execute();
    await until(async () => (await currentBillingRules(stack.deps)).runBaseMilli === 10, 5000, 'the NOTIFY of the soft delete');
    await runOnce(who);

    expect(await runCharges(team.id)).toEqual([{ amount_milli: -10 }, { amount_milli: -37 }, { amount_milli: -5 }, { amount_milli: -10 }]);
  });

  it('through the data API: a platform administrator\'s insert and update price the next run; a bad value or a non-admin is refused, nothing changes', async () => {
    await stack.app.listen({ port: 0, host: '127.0.0.1' });
    const origin = `http://127.0.0.1:${(stack.app.server.address() as AddressInfo).port}`;
    const anonKey = anonKeysOf(stack.deps.secrets).current!;
    const admin = await make.user('platform-admin');
    await stack.db.updateTable('users').set({ is_platform_admin: true }).where('id', '=', admin.id).execute();
    const someone = await make.user('someone');
    const as = (userId: string) => createClient(origin, anonKey, { accessToken: async () => make.jwt(userId), realtime: { transport: WebSocket as never } });
    const { team, apiKey } = await make.fundedTenant(100_000);
    const { deploymentId } = await publishDirect(stack.db, plain, { teamId: team.id });
    const who = { teamId: team.id, apiKey, deploymentId };
    await stack.db.updateTable('billing_rules').set({ deleted_at: sql<Date>`now()` as never }).where('deleted_at', 'is', null).execute();

    const inserted = await as(admin.id).from('billing_rules').insert({ rule_key: 'runBaseMilli', value: 23 }).select('id, rule_key, value').single();
    expect(inserted.error).toBeNull();
    await until(async () => (await currentBillingRules(stack.deps)).runBaseMilli === 23, 5000, 'the data API insert reaching the cache');
    await runOnce(who);
    const updated = await as(admin.id).from('billing_rules').update({ value: 24 }).eq('rule_key', 'runBaseMilli').is('deleted_at', null).select('value');
    expect(updated.error).toBeNull();
    await until(async () => (await currentBillingRules(stack.deps)).runBaseMilli === 24, 5000, 'the data API update reaching the cache');
    await runOnce(who);
    expect(await runCharges(team.id)).toEqual([{ amount_milli: -23 }, { amount_milli: -24 }]);

    const before = await liveRules();
    const negative = await as(admin.id).from('billing_rules').update({ value: -1 }).eq('rule_key', 'runBaseMilli').is('deleted_at', null);
    expect(negative.error?.message).toMatch(/runBaseMilli/);
    const unknown = await as(admin.id).from('billing_rules').insert({ rule_key: 'freeLunch', value: 0 });
    expect(unknown.error?.message).toMatch(/Unknown billing rule "freeLunch"/);
    const notAdmin = await as(someone.id).from('billing_rules').update({ value: 1 }).eq('rule_key', 'runBaseMilli').is('deleted_at', null).select('id');
    expect(notAdmin.data ?? []).toEqual([]); // RLS: the row is not theirs to update
    expect(await liveRules()).toEqual(before);
    expect((await currentBillingRules(stack.deps)).runBaseMilli).toBe(24);
    await stack.db.updateTable('billing_rules').set({ deleted_at: sql<Date>`now()` as never }).where('deleted_at', 'is', null).execute();
  });

  it('a load reads through its own caller, not a transaction an earlier caller has since ended', async () => {
    const cache = new BillingRulesCache();
    await stack.db.transaction().execute(async (trx) => { await cache.get(trx); });
    cache.invalidate();
    await expect(cache.get(stack.db)).resolves.toMatchObject({ runBaseMilli: expect.any(Number) });
  });

  it('reads are served from memory until a change is reported', async () => {
    const cache = new BillingRulesCache(); // follows nothing: only invalidate() (or the TTL) drops it
    const before = (await cache.get(stack.db)).llmPer1kTokensMilli;
    await stack.db.insertInto('billing_rules').values({ rule_key: 'llmPer1kTokensMilli', value: JSON.stringify(before + 7) }).execute();
    try {
      expect((await cache.get(stack.db)).llmPer1kTokensMilli).toBe(before);
      cache.invalidate();
      expect((await cache.get(stack.db)).llmPer1kTokensMilli).toBe(before + 7);
    } finally {
      await stack.db.deleteFrom('billing_rules').where('rule_key', '=', 'llmPer1kTokensMilli').execute();
    }
  });

  it('validateBillingRule: the setting schema\'s keys and values only', () => {
    expect(validateBillingRule('runBaseMilli', 0)).toEqual({ ok: true, ruleKey: 'runBaseMilli' });
    expect(validateBillingRule('llmModelPer1kTokensMilli', { 'gpt-big': 300 })).toEqual({ ok: true, ruleKey: 'llmModelPer1kTokensMilli' });
    expect(validateBillingRule('freeLunch', 0)).toEqual({
      ok: false, message: 'Unknown billing rule "freeLunch": known rules are runBaseMilli, llmPer1kTokensMilli, llmModelPer1kTokensMilli',
    });
    expect(validateBillingRule('constructor', 1).ok).toBe(false);
    for (const [key, value] of [
      ['runBaseMilli', -1], ['runBaseMilli', 2.5], ['runBaseMilli', '10'], ['runBaseMilli', null],
      ['llmPer1kTokensMilli', -20], ['llmModelPer1kTokensMilli', { m: -5 }], ['llmModelPer1kTokensMilli', { '': 5 }], ['llmModelPer1kTokensMilli', 3],
    ] as const) {
      const check = validateBillingRule(key, value);
      expect(check.ok, `${key} ${JSON.stringify(value)}`).toBe(false);
      if (!check.ok) expect(check.message).toMatch(new RegExp(`^Invalid value for billing rule ${key}`));
    }
  });

  it('the table refuses an unknown key or a negative price (as the data API\'s own connection would write it); nothing changes', async () => {
    const before = await liveRules();
    const attempts = [
      { rule_key: 'freeLunch', value: '0' },
      { rule_key: 'runBaseMilli', value: '-1' },
      { rule_key: 'runBaseMilli', value: '1.5' },
      { rule_key: 'llmModelPer1kTokensMilli', value: '{"m": -5}' },
      { rule_key: 'llmPer1kTokensMilli', value: '"20"' },
    ];
    for (const row of attempts) {
      const error = await stack.db.insertInto('billing_rules').values(row).execute().then(() => null, (e: unknown) => e as { code?: string; constraint?: string });
      expect(error?.code, JSON.stringify(row)).toBe('23514');
    }
    expect(await liveRules()).toEqual(before);
  });

  describe('settings set billing.rules writes the rows', () => {
    const cli = (...args: string[]) => runCli(args, stack.env);

    it('the value becomes the live rows (keys left out go back to their defaults); the site setting is not written', async () => {
      const first = await cli('settings', 'set', '--key', 'billing.rules', '--value', '{"runBaseMilli": 12, "llmModelPer1kTokensMilli": {"m": 300}}');
      expect(first.code, first.stderr).toBe(0);
      expect(first.json).toMatchObject({ table: 'billing_rules', effective: { runBaseMilli: 12, llmPer1kTokensMilli: 20, llmModelPer1kTokensMilli: { m: 300 } } });
      const second = await cli('settings', 'set', '--key', 'billing.rules', '--value', '{"runBaseMilli": 15}');
      expect(second.code, second.stderr).toBe(0);
      const live = (await liveRules()).filter((row) => row.deleted_at === null).map(({ rule_key, value }) => ({ rule_key, value }));
      expect(live).toEqual([{ rule_key: 'runBaseMilli', value: 15 }]);
      await until(async () => (await currentBillingRules(stack.deps)).runBaseMilli === 15, 5000, 'the NOTIFY of the CLI\'s write');
      expect(await stack.db.selectFrom('site_settings').select('key').where('key', '=', 'billing.rules').execute()).toEqual([]);
    });

    it('an unknown key or a negative price: exit 2 naming it, nothing changes', async () => {
      const before = await liveRules();
      for (const [value, named] of [['{"runBaseMilli": -1}', 'runBaseMilli'], ['{"freeLunch": 0}', 'freeLunch'], ['[1]', 'billing.rules']] as const) {
        const res = await cli('settings', 'set', '--key', 'billing.rules', '--value', value);
        expect(res.code, value).toBe(2);
        expect(res.error).toMatchObject({ error: 'invalid_value' });
        expect(String(res.error?.message)).toContain(named);
      }
      expect(await liveRules()).toEqual(before);
    });
  });
});
