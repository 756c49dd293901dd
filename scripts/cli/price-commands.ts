import { z } from 'zod';
import {
  billingPeriods, createPrice, currencyCodeSchema, MAX_PRICE_CREDITS, paymentMethodIdSchema, paymentMethodNameSchema, priceDescriptionSchema,
  priceNameSchema, productCodeSchema, productTypes, setPaymentMethod,
} from '../../shared/billing/price-list.js';
import { defineCommand, flag, type Command } from './command.js';
import { asFlagErrors, positiveIntFlag, switchFlag } from './flags.js';

const wholeCreditsFlag = z.string().regex(/^\d+$/, 'expected whole credits (0 or more)').transform(Number)
  .pipe(z.number().int().min(0).max(MAX_PRICE_CREDITS));
/** "CNY,USD": upper-cased, duplicates dropped by setPaymentMethod. */
const currencyListFlag = z.string().transform((list) => list.split(',').map((code) => code.trim()).filter(Boolean))
  .pipe(z.array(currencyCodeSchema).min(1, 'expected a comma list of ISO 4217 codes such as "CNY,USD"'));

/** price create, payment-method set (CONTRACTS.md "Billing"): the list GET /public/payment/* shows. */
export const priceCommands: Record<string, Command> = {
  'price create': defineCommand({
    summary: 'Add a price to the public price list (credits packs and subscriptions)',
    prints: '{ id }',
    flags: {
      'product-code': flag(productCodeSchema, 'product code', 'CODE'),
      name: flag(priceNameSchema, 'name shown to buyers', 'N'),
      description: flag(priceDescriptionSchema.optional(), 'description shown to buyers', 'D'),
      amount: flag(positiveIntFlag, 'price in minor units (cents)', 'N'),
      currency: flag(currencyCodeSchema.optional(), 'ISO 4217 currency', 'CNY'),
      credits: flag(wholeCreditsFlag.optional(), 'whole credits it grants (N × 1000 milli-credits)', 'N'),
      'product-type': flag(z.enum(productTypes).optional(), 'what it sells (default credits)'),
      'billing-period': flag(z.enum(billingPeriods).optional(), 'how often it is paid'),
      featured: flag(switchFlag.optional(), 'shown first (bare flag means true)', 'true|false'),
    },
    run: (f, ctx) => asFlagErrors(() => createPrice(ctx.db(), {
      productCode: f['product-code'], name: f.name, description: f.description, amount: f.amount, currency: f.currency,
      credits: f.credits, productType: f['product-type'], billingPeriod: f['billing-period'], isFeatured: f.featured,
    })),
  }),

  /** Creates the method or replaces its name and currencies. */
  'payment-method set': defineCommand({
    summary: 'Create a payment method of the public list, or replace its name and currencies',
    prints: '{ id }',
    flags: {
      id: flag(paymentMethodIdSchema, 'method id', 'ID'),
      name: flag(paymentMethodNameSchema, 'name shown to buyers', 'N'),
      currencies: flag(currencyListFlag, 'comma list of ISO 4217 codes', '"CNY,USD"'),
    },
    run: (f, ctx) => asFlagErrors(() => setPaymentMethod(ctx.db(), { id: f.id, name: f.name, currencies: f.currencies })),
  }),
};
