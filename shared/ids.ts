// No Node import: handles and other pure shapes that workflow code reads import `isUuid` from here.
export const newId = (): string => globalThis.crypto.randomUUID();

/** URL-safe slug from a display name; a random suffix keeps it unique without a read-then-write race. */
export function slugify(name: string): string {
  const base = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40);
  return base || 'item';
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Ids from paths and tokens are checked before they reach a uuid column (a bad cast is a 500). */
export const isUuid = (value: string): boolean => UUID.test(value);

/**
 * An order-like number (CONTRACTS.md): `prefix`, the UTC date and time to the second (numbers sort
 * by creation; an operator reads the day at a glance) and 6 random digits. Uniqueness is the
 * database's (unique columns); a collision is a retried insert, not a guess.
 */
export function datedNumber(prefix: string, at = new Date()): string {
  const stamp = at.toISOString().replace(/[-:T]/g, '').slice(0, 14);
  const random6 = String(globalThis.crypto.getRandomValues(new Uint32Array(1))[0]! % 1_000_000).padStart(6, '0');
  return `${prefix}${stamp}${random6}`;
}
