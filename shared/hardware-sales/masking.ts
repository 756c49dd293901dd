import type { HwAddress } from '../db/types.js';

// What buyers, friends and phone lookups may see of an order (spec §2.13, §2.15): every masking
// rule of the hardware views, here once, each tested once per field (masking.test.ts).

/** `+8613812345678` → `+86138****5678`: the country code and carrier prefix stay, the middle four never show. */
export function maskPhone(phone: string | null | undefined): string | null {
  if (!phone) return null;
  const trimmed = phone.trim();
  if (trimmed.length <= 8) return '*'.repeat(trimmed.length);
  return `${trimmed.slice(0, trimmed.length - 8)}****${trimmed.slice(-4)}`;
}

/** A receiver's name with the family name hidden: `张三` → `*三`, `Zhang San` → `***** San`. */
export function maskName(name: string): string {
  const trimmed = name.trim();
  const words = trimmed.split(/\s+/);
  // Latin-script names put the given name last in our forms (`Zhang San`): hide all but the last word.
  if (words.length > 1) return [...words.slice(0, -1).map((w) => '*'.repeat(w.length)), words.at(-1)].join(' ');
  const chars = [...trimmed];
  return chars.length <= 1 ? '*' : `*${chars.slice(1).join('')}`;
}

/** An address line without its house and room numbers: every run of digits becomes `**`. */
export function maskAddressLine(line: string): string {
  return line.replace(/[0-9０-９]+/g, '**');
}

/** An order or source order number for someone other than its buyer: `HWO****5678`. */
export function maskOrderNo(orderNo: string): string {
  return orderNo.length <= 7 ? '*'.repeat(orderNo.length) : `${orderNo.slice(0, 3)}****${orderNo.slice(-4)}`;
}

export interface MaskedAddress {
  receiverName: string;
  province: string;
  city: string;
  district: string | null;
  addressLine: string;
  postalCode: string | null;
}

/** The address as the buyer's own views show it (§2.13): no phone, no house number, the family name hidden. */
export function maskAddress(address: HwAddress): MaskedAddress {
  return {
    receiverName: maskName(address.receiverName),
    province: address.province,
    city: address.city,
    district: address.district ?? null,
    addressLine: maskAddressLine(address.addressLine),
    postalCode: address.postalCode ?? null,
  };
}
