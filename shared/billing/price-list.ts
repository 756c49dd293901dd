import { z } from 'zod';
import type { Database } from '../db/client.js';
import { AppError } from '../errors.js';
import { newId } from '../ids.js';
import { insertPrice, listActivePrices, listPaymentMethodRows, upsertPaymentMethod } from './price-list-repository.js';

// The price list of general payments (spec §2.17–2.18, CONTRACTS.md "Billing"): what a team can buy
// with which currency, and the payment methods on offer. The operator writes it (`price create`,
// `payment-method set`); `GET /public/payment/prices|methods` show it and checkout charges these
// rows. Not to be confused with pricing.ts, which is what a run costs in credits.

export const productTypes = ['credits', 'subscription'] as const;
export const billingPeriods = ['one_time', 'month', 'year'] as const;
export type ProductType = (typeof productTypes)[number];
export type BillingPeriod = (typeof billingPeriods)[number];

/** An ISO 4217 code in any case (`usd` is USD), stored and compared upper-case. */
export const currencyCodeSchema = z.string().trim().regex(/^[A-Za-z]{3}$/, 'expected a 3-letter ISO 4217 code such as CNY')
  .transform((code) => code.toUpperCase());
export const DEFAULT_PRICE_CURRENCY = 'CNY';
export const productCodeSchema = z.string().trim().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'letters, digits, ".", "_" or "-", at most 64');
export const priceNameSchema = z.string().trim().min(1).max(200);
export const priceDescriptionSchema = z.string().trim().max(2000);
export const paymentMethodIdSchema = z.string().regex(/^[a-z0-9_-]{1,64}$/, 'lower-case letters, digits, "_" or "-", 1 to 64');
export const paymentMethodNameSchema = z.string().trim().min(1).max(200);
/** Credits become milli-credits (× 1000) when granted: the product must stay an exact integer. */
export const MAX_PRICE_CREDITS = Math.floor(Number.MAX_SAFE_INTEGER / 1000);

export interface PriceItem {
  id: string;
  productType: ProductType;
  productCode: string;
  name: string;
  description: string | null;
  /** Minor units (fen, cents) of `currency`. */
  amount: number;
  currency: string;
  /** Whole credits. */
  credits: number;
  billingPeriod: BillingPeriod;
  isFeatured: boolean;
}

export interface NewPrice {
  productCode: string;
  name: string;
  description?: string | null;
  amount: number;
  currency?: string;
  credits?: number;
  productType?: ProductType;
  billingPeriod?: BillingPeriod;
  isFeatured?: boolean;
}

/** A rule broken by an input; `field` names it (the CLI turns it into the flag's name). */
const invalid = (field: string, message: string) => new AppError(400, 'invalid_input', `${field}: ${message}`, { field });

/**
 * The period follows the product unless given: a credit pack is bought once, a subscription renews
 * monthly. The mismatched pairs are refused, since checkout could not tell what they mean.
 */
function periodOf(productType: ProductType, given: BillingPeriod | undefined): BillingPeriod {
  const period = given ?? (productType === 'subscription' ? 'month' : 'one_time');
  if (productType === 'credits' && period !== 'one_time') throw invalid('billingPeriod', 'a credits price is one_time');
  if (productType === 'subscription' && period === 'one_time') throw invalid('billingPeriod', 'a subscription renews every month or year');
  return period;
}

export async function createPrice(db: Database, input: NewPrice): Promise<{ id: string }> {
  const productType = input.productType ?? 'credits';
  if (!Number.isSafeInteger(input.amount) || input.amount < 1) throw invalid('amount', 'a whole number of minor units, at least 1');
  const credits = input.credits ?? 0;
  if (!Number.isInteger(credits) || credits < 0 || credits > MAX_PRICE_CREDITS) throw invalid('credits', `whole credits, 0 to ${MAX_PRICE_CREDITS}`);
  return insertPrice(db, {
    id: newId(), product_type: productType, product_code: input.productCode, name: input.name,
    description: input.description || null, amount: input.amount, currency: (input.currency ?? DEFAULT_PRICE_CURRENCY).toUpperCase(),
    credits, billing_period: periodOf(productType, input.billingPeriod), is_featured: input.isFeatured ?? false,
  });
}

/** The active prices in one currency: featured first, then cheapest first (then oldest, for a stable order). */
export async function listPublicPrices(db: Database, currency: string): Promise<PriceItem[]> {
  const rows = await listActivePrices(db, currency.toUpperCase());
  return rows.map((row) => ({
    id: row.id, productType: row.product_type, productCode: row.product_code, name: row.name, description: row.description,
    amount: row.amount, currency: row.currency, credits: row.credits, billingPeriod: row.billing_period, isFeatured: row.is_featured,
  }));
}

export interface PaymentMethod {
  id: string;
  name: string;
  /** Upper-case ISO 4217 codes. */
  currencies: string[];
}

/** Creates the method or replaces its name and currencies (its place in the list stays). */
export async function setPaymentMethod(db: Database, input: PaymentMethod): Promise<{ id: string }> {
  const currencies = [...new Set(input.currencies.map((code) => code.toUpperCase()))];
  if (currencies.length === 0) throw invalid('currencies', 'at least one currency');
  return upsertPaymentMethod(db, { id: input.id, name: input.name, currencies: JSON.stringify(currencies) });
}

/** The methods, in the order they were first set; with `currency`, only those that take it. */
export async function listPaymentMethods(db: Database, currency?: string): Promise<PaymentMethod[]> {
  return listPaymentMethodRows(db, currency?.toUpperCase());
}
