import { randomBytes } from 'node:crypto';
import type { HwSkuStatus } from '../../shared/db/types.js';
import { addTier, createDiscountCode, createSku, type NewDiscountCode, type NewTier } from '../../shared/hardware-sales/catalogue.js';
import { issuePhoneToken } from '../../shared/hardware-sales/phone-tokens.js';
import { createUser } from '../../shared/identity/service.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import type { TestStack } from '../harness/stack.js';

// Hardware sales fixtures: a catalogue made through the catalogue service (as `sku create`,
// `sku add-tier` and `discount-code create` make it), buyers with every kind of identity, and the
// public endpoints as a browser calls them.

export const unique = (prefix: string) => `${prefix}-${randomBytes(4).toString('hex')}`;

/** A tier of a fixture SKU; every field but the code has a default (standard, 199.00, 100 units). */
export type TierSpec = Partial<Omit<NewTier, 'sku'>> & { tierCode: string };

export interface SkuFixture {
  id: string;
  sku: string;
  tierCodes: string[];
}

export interface Buyer {
  userId: string;
  phone: string | null;
  jwt: string;
  /** `{ authorization: 'Bearer <jwt>' }` */
  headers: Record<string, string>;
}

let phoneCounter = 0;
/** A fresh E.164 phone (unique per process and per call). */
export const uniquePhone = () => `+86139${String(process.pid % 10_000).padStart(4, '0')}${String((phoneCounter += 1) % 10_000).padStart(4, '0')}`;

// Plain values, kept where scripts can import them without the test harness (scripts/chaos/orders.ts).
import { generousRateLimits, testAddress } from './order-inputs.js';

export { generousRateLimits, testAddress };

export function hardwareFixtures(stack: TestStack) {
  const { db } = stack;
  return {
    /** A SKU with tiers (default: one standard tier `std`, marked standard) and optional codes. */
    async sku(spec: { sku?: string; title?: string; currency?: string; status?: HwSkuStatus; salesMode?: 'standard' | 'preorder'; tiers?: TierSpec[] } = {}): Promise<SkuFixture> {
      const sku = spec.sku ?? unique('SKU');
      const created = await createSku(db, { sku, title: spec.title ?? 'Desk Robot', currency: spec.currency, status: spec.status, salesMode: spec.salesMode });
      const tiers = spec.tiers ?? [{ tierCode: 'std', isStandard: true }];
      for (const tier of tiers) {
        await addTier(db, { title: `Tier ${tier.tierCode}`, priceCents: 19_900, stock: 100, ...tier, sku });
      }
      return { id: created.id, sku, tierCodes: tiers.map((tier) => tier.tierCode) };
    },

    /** A discount code (default: a fresh code, 20.00 off, no limits). */
    async code(spec: Partial<NewDiscountCode> = {}): Promise<{ id: string; code: string }> {
      return createDiscountCode(db, { code: unique('CODE').toUpperCase(), discountCents: 2_000, ...spec });
    },

    /** A user, optionally with a phone on the account, and a login JWT. */
    async buyer(options: { phone?: string | null; label?: string } = {}): Promise<Buyer> {
      const phone = options.phone === undefined ? uniquePhone() : options.phone;
      const user = await createUser(db, { email: `${unique(options.label ?? 'buyer')}@example.com`, name: options.label ?? 'buyer', ...(phone ? { phone } : {}) });
      const jwt = await stack.deps.idp.issue(user.id, 3600);
      return { userId: user.id, phone, jwt, headers: { authorization: `Bearer ${jwt}` } };
    },

    /** A phone token for `userId` (as /auth/phone/verify issues it). */
    phoneToken: (userId: string, phone: string, ttlSeconds = 900) => issuePhoneToken(db, { userId, phone }, ttlSeconds),

    /** Sets `hardware_sales.rate_limits` to `generousRateLimits` (over any `overrides`). */
    async relaxRateLimits(overrides: Partial<typeof generousRateLimits> = {}): Promise<void> {
      await upsertSiteSetting(db, 'hardware_sales.rate_limits', { ...generousRateLimits, ...overrides });
      stack.deps.settings.invalidate('hardware_sales.rate_limits');
    },

    /** Runs `body` with some limits lowered, then back to the generous ones (not the defaults). */
    async withRateLimits(lowered: Partial<typeof generousRateLimits>, body: () => Promise<void>): Promise<void> {
      await this.relaxRateLimits(lowered);
      try {
        await body();
      } finally {
        await this.relaxRateLimits();
      }
    },

    getConfig: (sku: string, options: { ip?: string } = {}) =>
      stack.app.inject({ method: 'GET', url: `/public/hardware-sales/skus/${encodeURIComponent(sku)}/config`, remoteAddress: options.ip ?? '127.0.0.1' }),

    /** POST to a public hardware endpoint (`/public/hardware-sales/<path>`) with a JSON body. */
    post: (path: string, body: unknown, options: { headers?: Record<string, string>; ip?: string } = {}) => stack.app.inject({
      method: 'POST', url: `/public/hardware-sales/${path}`, remoteAddress: options.ip ?? '127.0.0.1',
      headers: { 'content-type': 'application/json', ...options.headers }, payload: JSON.stringify(body),
    }),

    /** What a refused request must leave unchanged: stock, code slots, orders and their rows. */
    async snapshot() {
      const [tiers, codes, orders, items, redemptions, events, starts] = await Promise.all([
        db.selectFrom('hw_tiers').select(['id', 'stock']).orderBy('id').execute(),
        db.selectFrom('hw_discount_codes').select(['id', 'used_count']).orderBy('id').execute(),
        db.selectFrom('hw_orders').select('id').execute(),
        db.selectFrom('hw_order_items').select('id').execute(),
        db.selectFrom('hw_code_redemptions').select('id').execute(),
        db.selectFrom('hw_order_events').select('id').execute(),
        db.selectFrom('workflow_starts').select('workflow_id').execute(),
      ]);
      return { tiers, codes, orders: orders.length, items: items.length, redemptions: redemptions.length, events: events.length, starts: starts.length };
    },

    async stockOf(skuId: string, tierCode: string): Promise<number> {
      const row = await db.selectFrom('hw_tiers').select('stock').where('sku_id', '=', skuId).where('tier_code', '=', tierCode).executeTakeFirstOrThrow();
      return row.stock;
    },

    async usedCount(codeId: string): Promise<number> {
      return (await db.selectFrom('hw_discount_codes').select('used_count').where('id', '=', codeId).executeTakeFirstOrThrow()).used_count;
    },

    /** Ends the sagas this file's orders started on the shared Temporal server (no worker runs them here). */
    async terminateOrderSagas(): Promise<void> {
      const orders = await db.selectFrom('hw_orders').select('order_no').execute();
      await Promise.all(orders.map(({ order_no }) => stack.deps.temporal.client.workflow.getHandle(`hardware-order-${order_no}`)
        .terminate('test cleanup').catch(() => undefined)));
    },
  };
}

export type HardwareFixtures = ReturnType<typeof hardwareFixtures>;
