import { z } from 'zod';
import {
  billingPeriods, createPrice, currencyCodeSchema, MAX_PRICE_CREDITS, paymentMethodIdSchema, paymentMethodNameSchema, priceDescriptionSchema,
  priceNameSchema, productCodeSchema, productTypes, setPaymentMethod,
} from '../../shared/billing/price-list.js';
import type { Command } from './command.js';
import { asFlagErrors, positiveIntFlag, readFlags, switchFlag } from './flags.js';

const wholeCreditsFlag = z.string().regex(/^\d+$/, 'expected whole credits (0 or more)').transform(Number)
  .pipe(z.number().int().min(0).max(MAX_PRICE_CREDITS));
/** "CNY,USD": upper-cased, duplicates dropped by setPaymentMethod. */
const currencyListFlag = z.string().transform((list) => list.split(',').map((code) => code.trim()).filter(Boolean))
  .pipe(z.array(currencyCodeSchema).min(1, 'expected a comma list of ISO 4217 codes such as "CNY,USD"'));

/** price create, payment-method set (CONTRACTS.md "Billing"): the list GET /public/payment/* shows. */
export const priceCommands: Record<string, Command> = {
  'price create': async (flags, ctx) => {
    const f = readFlags(flags, {
      'product-code': productCodeSchema, name: priceNameSchema, description: priceDescriptionSchema.optional(),
      amount: positiveIntFlag, currency: currencyCodeSchema.optional(), credits: wholeCreditsFlag.optional(),
      'product-type': z.enum(productTypes).optional(), 'billing-period': z.enum(billingPeriods).optional(), featured: switchFlag.optional(),
    });
    return asFlagErrors(() => createPrice(ctx.db(), {
      productCode: f['product-code'], name: f.name, description: f.description, amount: f.amount, currency: f.currency,
      credits: f.credits, productType: f['product-type'], billingPeriod: f['billing-period'], isFeatured: f.featured,
    }));
  },

  /** Creates the method or replaces its name and currencies. */
  'payment-method set': async (flags, ctx) => {
    const f = readFlags(flags, { id: paymentMethodIdSchema, name: paymentMethodNameSchema, currencies: currencyListFlag });
    return asFlagErrors(() => setPaymentMethod(ctx.db(), { id: f.id, name: f.name, currencies: f.currencies }));
  },
};
