import { z } from 'zod';
import {
  addTier, createDiscountCode, createSku, currencySchema, discountCodeSchema, salesModes, skuCodeSchema, skuStatuses, tierCodeSchema,
  tierKinds, titleSchema,
} from '../../shared/hardware-sales/catalogue.js';
import type { Command } from './command.js';
import { asFlagErrors, positiveIntFlag, readFlags, switchFlag } from './flags.js';

const nonNegativeIntFlag = z.string().regex(/^\d+$/, 'expected a whole number (0 or more)').transform(Number)
  .pipe(z.number().int().min(0).max(2_147_483_647));
const centsFlag = positiveIntFlag.pipe(z.number().max(2_147_483_647));
const isoFlag = z.iso.datetime({ offset: true, message: 'expected an ISO 8601 time such as 2026-12-01T00:00:00Z' }).transform((value) => new Date(value));
/** sku create, sku add-tier, discount-code create (CONTRACTS.md "Hardware sales"). */
export const hardwareSalesCommands: Record<string, Command> = {
  'sku create': async (flags, ctx) => {
    const f = readFlags(flags, {
      sku: skuCodeSchema, title: titleSchema, currency: currencySchema.optional(),
      'sales-mode': z.enum(salesModes).optional(), status: z.enum(skuStatuses).optional(),
    });
    return asFlagErrors(() => createSku(ctx.db(), { sku: f.sku, title: f.title, currency: f.currency, salesMode: f['sales-mode'], status: f.status }));
  },

  'sku add-tier': async (flags, ctx) => {
    const f = readFlags(flags, {
      sku: skuCodeSchema, 'tier-code': tierCodeSchema, title: titleSchema, 'price-cents': centsFlag, stock: nonNegativeIntFlag,
      'display-limit': nonNegativeIntFlag.optional(), kind: z.enum(tierKinds).optional(), standard: switchFlag.optional(),
      'pay-now-cents': centsFlag.optional(), 'top-up-cents': nonNegativeIntFlag.optional(),
      'starts-at': isoFlag.optional(), 'ends-at': isoFlag.optional(), 'cost-cents': nonNegativeIntFlag.optional(),
    });
    return asFlagErrors(() => addTier(ctx.db(), {
      sku: f.sku, tierCode: f['tier-code'], title: f.title, priceCents: f['price-cents'], stock: f.stock, displayLimit: f['display-limit'],
      kind: f.kind, isStandard: f.standard, payNowCents: f['pay-now-cents'], topUpCents: f['top-up-cents'],
      startsAt: f['starts-at'], endsAt: f['ends-at'], costCents: f['cost-cents'],
    }));
  },

  'discount-code create': async (flags, ctx) => {
    const f = readFlags(flags, {
      code: discountCodeSchema, 'discount-cents': centsFlag, title: titleSchema.optional(), 'max-uses': positiveIntFlag.optional(),
      'per-person-limit': positiveIntFlag.optional(), 'min-amount-cents': nonNegativeIntFlag.optional(), 'expires-at': isoFlag.optional(),
      sku: skuCodeSchema.optional(), 'tier-code': tierCodeSchema.optional(),
    });
    const created = await asFlagErrors(() => createDiscountCode(ctx.db(), {
      code: f.code, discountCents: f['discount-cents'], title: f.title, maxUses: f['max-uses'], perPersonLimit: f['per-person-limit'],
      minAmountCents: f['min-amount-cents'], expiresAt: f['expires-at'], sku: f.sku, tierCode: f['tier-code'],
    }));
    return { code: created.code };
  },
};
