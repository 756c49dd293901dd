import { z } from 'zod';

// What the buyer's requests share: one address schema for create and for changing it later (so
// both accept and refuse the same addresses; blank optional fields mean absent) (api/plugins/public-envelope.ts answers a schema failure).

const text = (max: number) => z.string().trim().min(1).max(max);
const optionalText = (max: number, pattern?: RegExp, what = 'invalid format') =>
  z.string().trim().max(max).refine((value) => value === '' || !pattern || pattern.test(value), what).nullish();

export const addressSchema = z.object({
  receiverName: text(50),
  receiverPhone: optionalText(20, /^(\+[1-9]\d{7,14}|\d{5,15})$/, 'expected E.164 (+8613800000000) or local digits'),
  province: text(50),
  city: text(50),
  district: optionalText(50),
  addressLine: text(200),
  postalCode: optionalText(12, /^[A-Za-z0-9][A-Za-z0-9 -]{1,10}[A-Za-z0-9]$/, 'expected a postal code such as 100000'),
});

export const blankToNull = (value: string | null | undefined): string | null => (value === undefined || value === null || value === '' ? null : value);


