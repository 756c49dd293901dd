import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../shared/errors.js';
import { commands } from '../../scripts/cli/commands.js';
import { CliError, parseFlags } from '../../scripts/cli/flags.js';
import { runCli, type CliResult } from '../harness/cli.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { hardwareFixtures, unique, type HardwareFixtures } from './fixtures.js';

/** Every key of a JSON value, at any depth. */
function keysOf(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(keysOf);
  if (value && typeof value === 'object') return Object.entries(value).flatMap(([key, inner]) => [key, ...keysOf(inner)]);
  return [];
}
/** Tests that start the CLI as a process: each start takes seconds on a loaded machine. */
const CLI_TIMEOUT_MS = 120_000;
const leakyKey = (key: string) => /stock|cost/i.test(key) || key === 'id' || /Id$/.test(key);

describe('hardware catalogue: CLI and the public SKU configuration (spec §2.12, CONTRACTS.md "Hardware sales")', () => {
  let stack: TestStack;
  let hw: HardwareFixtures;
  /** The CLI as an operator runs it: a process of its own (slow on a busy machine, so used sparingly). */
  const cli = (...args: string[]) => runCli(args, stack.env);
  /** The same command table, flag parser and error mapping as scripts/cli.ts, in this process. */
  const cliHere = async (...args: string[]): Promise<CliResult> => {
    const name = commands[args.slice(0, 2).join(' ')] ? args.slice(0, 2).join(' ') : args[0]!;
    const fail = (error: string, message: string, code: number): CliResult => ({ code, stdout: '', stderr: message, json: null, error: { error, message } });
    try {
      const result = await commands[name]!(parseFlags(args.slice(name.split(' ').length)), {
        config: stack.config, db: () => stack.db, temporalAddress: () => '', warn: () => {},
      });
      return { code: 0, stdout: JSON.stringify(result), stderr: '', json: result, error: null };
    } catch (error) {
      if (error instanceof CliError) return fail(error.code, error.message, 2);
      if (error instanceof AppError) return fail(error.error, error.message, 1);
      throw error;
    }
  };

  beforeAll(async () => {
    stack = await createTestStack();
    hw = hardwareFixtures(stack);
  });
  afterAll(async () => {
    await stack?.close();
  });

  describe('CLI', () => {
    it('sku create prints { id, sku } with the defaults, and refuses a duplicate, a missing or a malformed flag', async () => {
      const sku = unique('BOT');
      const created = await cli('sku', 'create', '--sku', sku, '--title', 'Desk Robot');
      expect(created.code, created.stderr).toBe(0);
      expect(created.json).toEqual({ id: expect.any(String), sku });
      const row = await stack.db.selectFrom('hw_skus').selectAll().where('sku', '=', sku).executeTakeFirstOrThrow();
      expect(row).toMatchObject({ id: created.json!.id, title: 'Desk Robot', currency: 'CNY', sales_mode: 'standard', status: 'active', cost_cents: null });

      const missing = await cli('sku', 'create', '--sku', unique('BOT'));
      const [explicit, duplicate, badStatus, badCurrency] = await Promise.all([
        cliHere('sku', 'create', '--sku', `${sku}-x`, '--title', 'Pre', '--currency', 'USD', '--sales-mode', 'preorder', '--status', 'draft'),
        cliHere('sku', 'create', '--sku', sku, '--title', 'Again'),
        cliHere('sku', 'create', '--sku', unique('BOT'), '--title', 'T', '--status', 'live'),
        cliHere('sku', 'create', '--sku', unique('BOT'), '--title', 'T', '--currency', 'yuan'),
      ]);
      expect(explicit.code, explicit.stderr).toBe(0);
      expect(await stack.db.selectFrom('hw_skus').select(['currency', 'sales_mode', 'status']).where('sku', '=', `${sku}-x`).executeTakeFirst())
        .toEqual({ currency: 'USD', sales_mode: 'preorder', status: 'draft' });
      expect(duplicate.code).not.toBe(0);
      expect(duplicate.error).toMatchObject({ error: 'sku_exists' });
      expect(missing.code).not.toBe(0);
      expect(missing.error).toMatchObject({ error: 'missing_flag', message: expect.stringContaining('--title') });
      expect(badStatus.error).toMatchObject({ error: 'invalid_flag', message: expect.stringContaining('--status') });
      expect(badCurrency.error).toMatchObject({ error: 'invalid_flag', message: expect.stringContaining('--currency') });
    }, CLI_TIMEOUT_MS);

    it('sku add-tier stores the real stock and the cost, prints { sku, tierCode }, and checks its flags', async () => {
      const sku = unique('BOT');
      expect((await cliHere('sku', 'create', '--sku', sku, '--title', 'Desk Robot')).code).toBe(0);
      const added = await cli('sku', 'add-tier', '--sku', sku, '--tier-code', 'deposit', '--title', 'Deposit', '--price-cents', '49900', '--stock', '4321',
        '--display-limit', '500', '--kind', 'deposit', '--pay-now-cents', '9900', '--starts-at', '2026-01-01T00:00:00Z', '--ends-at', '2099-01-01T00:00:00+08:00',
        '--cost-cents', '12345');
      expect(added.code, added.stderr).toBe(0);
      expect(added.json).toEqual({ sku, tierCode: 'deposit' });
      const standard = await cliHere('sku', 'add-tier', '--sku', sku, '--tier-code', 'std', '--title', 'Standard', '--price-cents', '49900', '--stock', '10', '--standard');
      expect(standard.code, standard.stderr).toBe(0);
      const skuRow = await stack.db.selectFrom('hw_skus').select(['id', 'cost_cents']).where('sku', '=', sku).executeTakeFirstOrThrow();
      expect(skuRow.cost_cents).toBe(12_345);
      const tiers = await stack.db.selectFrom('hw_tiers').selectAll().where('sku_id', '=', skuRow.id).orderBy('tier_code').execute();
      expect(tiers.map((t) => ({ code: t.tier_code, kind: t.kind, standard: t.is_standard, price: t.price_cents, payNow: t.pay_now_cents, topUp: t.top_up_cents, stock: t.stock, display: t.display_limit })))
        .toEqual([
          { code: 'deposit', kind: 'deposit', standard: false, price: 49_900, payNow: 9_900, topUp: 40_000, stock: 4_321, display: 500 },
          { code: 'std', kind: 'standard', standard: true, price: 49_900, payNow: null, topUp: null, stock: 10, display: null },
        ]);
      expect(tiers[0]!.starts_at?.toISOString()).toBe('2026-01-01T00:00:00.000Z');
      expect(tiers[0]!.ends_at?.toISOString()).toBe('2098-12-31T16:00:00.000Z');

      const refusals = await Promise.all([
        cli('sku', 'add-tier', '--sku', 'NO-SUCH-SKU', '--tier-code', 'a', '--title', 'A', '--price-cents', '100', '--stock', '1'),
        cliHere('sku', 'add-tier', '--sku', sku, '--tier-code', 'std', '--title', 'Again', '--price-cents', '100', '--stock', '1'),
        cliHere('sku', 'add-tier', '--sku', sku, '--tier-code', 'a', '--title', 'A', '--price-cents', '0', '--stock', '1'),
        cliHere('sku', 'add-tier', '--sku', sku, '--tier-code', 'a', '--title', 'A', '--price-cents', '100', '--stock', '-1'),
        cliHere('sku', 'add-tier', '--sku', sku, '--tier-code', 'a', '--title', 'A', '--price-cents', '100', '--stock', '1', '--pay-now-cents', '50'),
        cliHere('sku', 'add-tier', '--sku', sku, '--tier-code', 'a', '--title', 'A', '--price-cents', '100', '--stock', '1', '--kind', 'deposit'),
        cliHere('sku', 'add-tier', '--sku', sku, '--tier-code', 'a', '--title', 'A', '--price-cents', '100', '--stock', '1', '--kind', 'deposit', '--pay-now-cents', '100'),
        cliHere('sku', 'add-tier', '--sku', sku, '--tier-code', 'a', '--title', 'A', '--price-cents', '100', '--stock', '1', '--kind', 'deposit', '--pay-now-cents', '30', '--top-up-cents', '10'),
        cliHere('sku', 'add-tier', '--sku', sku, '--tier-code', 'a', '--title', 'A', '--price-cents', '100', '--stock', '1', '--starts-at', 'tomorrow'),
        cliHere('sku', 'add-tier', '--sku', sku, '--tier-code', 'a', '--title', 'A', '--price-cents', '100', '--stock', '1', '--starts-at', '2026-02-01T00:00:00Z', '--ends-at', '2026-01-01T00:00:00Z'),
        cliHere('sku', 'add-tier', '--sku', sku, '--tier-code', 'a', '--title', 'A', '--price-cents', '100', '--stock', '1', '--kind', 'vip'),
        cliHere('sku', 'add-tier', '--sku', sku, '--tier-code', 'a', '--title', 'A', '--price-cents', '100', '--stock', '1', '--standard', 'maybe'),
      ]);
      expect(refusals.map((r) => [r.code !== 0, r.error?.error, String(r.error?.message ?? '').match(/--[a-z-]+/)?.[0] ?? null])).toEqual([
        [true, 'not_found', null],
        [true, 'tier_exists', null],
        [true, 'invalid_flag', '--price-cents'],
        [true, 'invalid_flag', '--stock'],
        [true, 'invalid_flag', '--pay-now-cents'],
        [true, 'invalid_flag', '--pay-now-cents'],
        [true, 'invalid_flag', '--pay-now-cents'],
        [true, 'invalid_flag', '--top-up-cents'],
        [true, 'invalid_flag', '--starts-at'],
        [true, 'invalid_flag', '--ends-at'],
        [true, 'invalid_flag', '--kind'],
        [true, 'invalid_flag', '--standard'],
      ]);
      expect(await stack.db.selectFrom('hw_tiers').select('id').where('sku_id', '=', skuRow.id).execute()).toHaveLength(2);
    }, CLI_TIMEOUT_MS);

    it('discount-code create prints { code }, limits a code to a SKU and tier, and refuses duplicates in any case', async () => {
      const { sku } = await hw.sku();
      const code = unique('Spring');
      const created = await cli('discount-code', 'create', '--code', code, '--discount-cents', '2000', '--title', 'Spring sale', '--max-uses', '5',
        '--per-person-limit', '1', '--min-amount-cents', '10000', '--expires-at', '2099-01-01T00:00:00Z', '--sku', sku, '--tier-code', 'std');
      expect(created.code, created.stderr).toBe(0);
      expect(created.json).toEqual({ code });
      const row = await stack.db.selectFrom('hw_discount_codes').selectAll().where('code', '=', code).executeTakeFirstOrThrow();
      expect(row).toMatchObject({
        title: 'Spring sale', discount_cents: 2_000, max_uses: 5, used_count: 0, per_person_limit: 1, min_amount_cents: 10_000,
        tier_code: 'std', status: 'active', kind: 'standard', metadata: {},
      });
      expect(row.sku_id).toBe((await stack.db.selectFrom('hw_skus').select('id').where('sku', '=', sku).executeTakeFirstOrThrow()).id);
      expect(row.expires_at?.toISOString()).toBe('2099-01-01T00:00:00.000Z');

      const [plain, duplicate, noSku, noTier, tierWithoutSku, zero, badCode] = await Promise.all([
        cliHere('discount-code', 'create', '--code', unique('PLAIN'), '--discount-cents', '500'),
        cliHere('discount-code', 'create', '--code', code.toUpperCase(), '--discount-cents', '500'),
        cliHere('discount-code', 'create', '--code', unique('X'), '--discount-cents', '500', '--sku', 'NO-SUCH-SKU'),
        cliHere('discount-code', 'create', '--code', unique('X'), '--discount-cents', '500', '--sku', sku, '--tier-code', 'nope'),
        cliHere('discount-code', 'create', '--code', unique('X'), '--discount-cents', '500', '--tier-code', 'std'),
        cliHere('discount-code', 'create', '--code', unique('X'), '--discount-cents', '0'),
        cliHere('discount-code', 'create', '--code', 'a b', '--discount-cents', '500'),
      ]);
      expect(plain.code, plain.stderr).toBe(0);
      expect(duplicate.error).toMatchObject({ error: 'code_exists' });
      expect(noSku.error).toMatchObject({ error: 'not_found' });
      expect(noTier.error).toMatchObject({ error: 'not_found' });
      expect(tierWithoutSku.error).toMatchObject({ error: 'invalid_flag', message: expect.stringContaining('--tier-code') });
      expect(zero.error).toMatchObject({ error: 'invalid_flag', message: expect.stringContaining('--discount-cents') });
      expect(badCode.error).toMatchObject({ error: 'invalid_flag', message: expect.stringContaining('--code') });
      for (const failed of [duplicate, noSku, noTier, tierWithoutSku, zero, badCode]) expect(failed.code).not.toBe(0);
    }, CLI_TIMEOUT_MS);
  });

  describe('GET /public/hardware-sales/skus/:sku/config', () => {
    it('shows the tiers and their prices, never the real stock, the cost or an internal id', async () => {
      const now = Date.now();
      const { sku, id } = await hw.sku({
        title: 'Desk Robot', tiers: [
          { tierCode: 'std', title: 'Standard', priceCents: 49_900, stock: 4_321, isStandard: true, displayLimit: 500, startsAt: new Date(now + 86_400_000) },
          { tierCode: 'early', title: 'Early bird', kind: 'early_bird', priceCents: 39_900, stock: 4_321, displayLimit: 100, startsAt: new Date(now - 86_400_000), endsAt: new Date(now + 86_400_000) },
          { tierCode: 'deposit', title: 'Deposit', kind: 'deposit', priceCents: 49_900, payNowCents: 9_900, stock: 4_321, costCents: 31_415 },
        ],
      });
      const res = await hw.getConfig(sku);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({
        success: true,
        data: {
          sku, title: 'Desk Robot', available: true, status: 'active', salesMode: 'standard', currency: 'CNY', standardTierCode: 'std',
          currentTier: 'deposit', soldOut: false,
          tiers: [
            { tierCode: 'deposit', title: 'Deposit', priceCents: 49_900, isStandard: false, tierKind: 'deposit', totalPriceCents: 49_900, payNowPriceCents: 9_900, topUpPriceCents: 40_000, displayLimit: null },
            { tierCode: 'early', title: 'Early bird', priceCents: 39_900, isStandard: false, tierKind: 'early_bird', totalPriceCents: 39_900, payNowPriceCents: 39_900, topUpPriceCents: 0, displayLimit: 100 },
            { tierCode: 'std', title: 'Standard', priceCents: 49_900, isStandard: true, tierKind: 'standard', totalPriceCents: 49_900, payNowPriceCents: 49_900, topUpPriceCents: 0, displayLimit: 500 },
          ],
        },
      });
      expect(keysOf(res.json()).filter(leakyKey)).toEqual([]);
      expect(res.body).not.toContain('4321');
      expect(res.body).not.toContain('31415');
      expect(res.body).not.toContain(id);
    });

    it('says which tier is current, whether anything is on sale, and whether the SKU is sold out', async () => {
      const now = Date.now();
      const soon = new Date(now + 3_600_000);
      const past = new Date(now - 3_600_000);
      const early = await hw.sku({ tiers: [{ tierCode: 'early', kind: 'early_bird', startsAt: new Date(now - 7_200_000), endsAt: soon }, { tierCode: 'std', isStandard: true, startsAt: soon }] });
      expect((await hw.getConfig(early.sku)).json().data).toMatchObject({ available: true, soldOut: false, currentTier: 'early', standardTierCode: 'std' });

      const earlyGone = await hw.sku({ tiers: [{ tierCode: 'early', endsAt: past, stock: 5 }, { tierCode: 'std', isStandard: true, startsAt: past }] });
      expect((await hw.getConfig(earlyGone.sku)).json().data).toMatchObject({ available: true, soldOut: false, currentTier: 'std' });

      const soldOut = await hw.sku({ tiers: [{ tierCode: 'a', stock: 0 }, { tierCode: 'b', stock: 0 }] });
      const soldOutView = (await hw.getConfig(soldOut.sku)).json().data;
      expect(soldOutView).toMatchObject({ available: false, soldOut: true, standardTierCode: null });
      expect(soldOutView).not.toHaveProperty('currentTier');

      const notYet = await hw.sku({ tiers: [{ tierCode: 'std', startsAt: soon }] });
      const notYetView = (await hw.getConfig(notYet.sku)).json().data;
      expect(notYetView).toMatchObject({ available: false, soldOut: false });
      expect(notYetView).not.toHaveProperty('currentTier');

      const partly = await hw.sku({ tiers: [{ tierCode: 'a', stock: 0 }, { tierCode: 'b', stock: 1 }], currency: 'USD', salesMode: 'preorder' });
      expect((await hw.getConfig(partly.sku)).json().data).toMatchObject({ available: true, soldOut: false, currentTier: 'b', currency: 'USD', salesMode: 'preorder' });

      const empty = await hw.sku({ tiers: [] });
      expect((await hw.getConfig(empty.sku)).json().data).toMatchObject({ available: false, soldOut: false, tiers: [] });
    });

    it('answers 404 SKU_NOT_FOUND for an unknown, draft or archived SKU', async () => {
      const draft = await hw.sku({ status: 'draft' });
      const archived = await hw.sku({ status: 'archived' });
      for (const sku of ['NO-SUCH-SKU', draft.sku, archived.sku, 'x'.repeat(90), '%20']) {
        const res = await hw.getConfig(sku);
        expect(res.statusCode, sku).toBe(404);
        expect(res.json()).toEqual({ success: false, error: { code: 'SKU_NOT_FOUND', message: 'SKU not found' } });
      }
    });

    it('documents the public routes in OpenAPI', async () => {
      const doc = (await stack.app.inject({ method: 'GET', url: '/docs/json' })).json();
      expect(doc.paths['/public/hardware-sales/skus/{sku}/config'].get.tags).toEqual(['hardware-sales']);
      expect(doc.paths['/public/hardware-sales/orders/quote'].post.tags).toEqual(['hardware-sales']);
      expect(doc.paths['/public/hardware-sales/orders'].post.responses['409']).toBeDefined();
    });
  });
});
