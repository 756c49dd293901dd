import { z } from 'zod';
import {
  addTier, createDiscountCode, createSku, currencySchema, discountCodeSchema, salesModes, skuCodeSchema, skuStatuses, tierCodeSchema,
  tierKinds, titleSchema,
} from '../../shared/hardware-sales/catalogue.js';
import { defineCommand, flag, type Command } from './command.js';
import { asFlagErrors, positiveIntFlag, switchFlag } from './flags.js';

const nonNegativeIntFlag = z.string().regex(/^\d+$/, 'expected a whole number (0 or more)').transform(Number)
  .pipe(z.number().int().min(0).max(2_147_483_647));
const centsFlag = positiveIntFlag.pipe(z.number().max(2_147_483_647));
const isoFlag = z.iso.datetime({ offset: true, message: 'expected an ISO 8601 time such as 2026-12-01T00:00:00Z' }).transform((value) => new Date(value));
/** sku create, sku add-tier, discount-code create (CONTRACTS.md "Hardware sales"). */
export const hardwareSalesCommands: Record<string, Command> = {
  'sku create': defineCommand({
    summary: 'Create a hardware SKU in the catalogue',
    prints: '{ id, sku }',
    flags: {
      sku: flag(skuCodeSchema, 'SKU code', 'CODE'),
      title: flag(titleSchema, 'title shown to buyers', 'T'),
      currency: flag(currencySchema.optional(), 'ISO 4217 currency (default CNY)', 'CNY'),
      'sales-mode': flag(z.enum(salesModes).optional(), 'how it sells (default standard)'),
      status: flag(z.enum(skuStatuses).optional(), 'catalogue status'),
    },
    run: (f, ctx) => asFlagErrors(() => createSku(ctx.db(), { sku: f.sku, title: f.title, currency: f.currency, salesMode: f['sales-mode'], status: f.status })),
  }),

  'sku add-tier': defineCommand({
    summary: 'Add a price tier with its stock to a SKU',
    prints: '{ sku, tierCode }',
    flags: {
      sku: flag(skuCodeSchema, 'SKU code', 'CODE'),
      'tier-code': flag(tierCodeSchema, 'tier code', 'T'),
      title: flag(titleSchema, 'title shown to buyers', 'T'),
      'price-cents': flag(centsFlag, 'price in cents', 'N'),
      stock: flag(nonNegativeIntFlag, 'real stock (never returned by any endpoint)', 'N'),
      'display-limit': flag(nonNegativeIntFlag.optional(), 'stock shown to buyers at most', 'N'),
      kind: flag(z.enum(tierKinds).optional(), 'tier kind'),
      standard: flag(switchFlag.optional(), "the SKU's standard tier (bare flag means true)", 'true|false'),
      'pay-now-cents': flag(centsFlag.optional(), 'deposit tiers: paid now, in cents', 'N'),
      'top-up-cents': flag(nonNegativeIntFlag.optional(), 'deposit tiers: paid later, in cents', 'N'),
      'starts-at': flag(isoFlag.optional(), 'on sale from', 'ISO'),
      'ends-at': flag(isoFlag.optional(), 'on sale until', 'ISO'),
      'cost-cents': flag(nonNegativeIntFlag.optional(), 'unit cost in cents (never returned by any endpoint)', 'N'),
    },
    run: (f, ctx) => asFlagErrors(() => addTier(ctx.db(), {
      sku: f.sku, tierCode: f['tier-code'], title: f.title, priceCents: f['price-cents'], stock: f.stock, displayLimit: f['display-limit'],
      kind: f.kind, isStandard: f.standard, payNowCents: f['pay-now-cents'], topUpCents: f['top-up-cents'],
      startsAt: f['starts-at'], endsAt: f['ends-at'], costCents: f['cost-cents'],
    })),
  }),

  'discount-code create': defineCommand({
    summary: 'Create a discount code, optionally limited to a SKU or tier',
    prints: '{ code }',
    flags: {
      code: flag(discountCodeSchema, 'the code buyers enter', 'C'),
      'discount-cents': flag(centsFlag, 'discount in cents', 'N'),
      title: flag(titleSchema.optional(), 'title shown to buyers', 'T'),
      'max-uses': flag(positiveIntFlag.optional(), 'uses in all at most', 'N'),
      'per-person-limit': flag(positiveIntFlag.optional(), 'uses per buyer at most', 'N'),
      'min-amount-cents': flag(nonNegativeIntFlag.optional(), 'smallest order it applies to, in cents', 'N'),
      'expires-at': flag(isoFlag.optional(), 'valid until', 'ISO'),
      sku: flag(skuCodeSchema.optional(), 'only for this SKU', 'CODE'),
      'tier-code': flag(tierCodeSchema.optional(), 'only for this tier of --sku', 'T'),
    },
    run: async (f, ctx) => {
      const created = await asFlagErrors(() => createDiscountCode(ctx.db(), {
        code: f.code, discountCents: f['discount-cents'], title: f.title, maxUses: f['max-uses'], perPersonLimit: f['per-person-limit'],
        minAmountCents: f['min-amount-cents'], expiresAt: f['expires-at'], sku: f.sku, tierCode: f['tier-code'],
      }));
      return { code: created.code };
    },
  }),
};
