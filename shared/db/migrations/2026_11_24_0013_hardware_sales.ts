import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// Hardware sales (docs/hardware-sales.md): the catalogue, phone login, orders and the rows their
// saga writes. Isolated from the general payments of `billing`: no table is shared with it.
// Money is integer cents; `stock` is the real number of units left (never shown to buyers).

const now = sql`now()`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createTable('hw_skus')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('sku', 'text', (c) => c.notNull().unique())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull().defaultTo('CNY'))
    .addColumn('sales_mode', 'text', (c) => c.notNull().defaultTo('standard').check(sql`sales_mode IN ('standard', 'preorder')`))
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('active').check(sql`status IN ('active', 'draft', 'archived')`))
    .addColumn('cost_cents', 'integer')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();

  await db.schema.createTable('hw_tiers')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('sku_id', 'uuid', (c) => c.notNull().references('hw_skus.id').onDelete('cascade'))
    .addColumn('tier_code', 'text', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull().defaultTo('standard').check(sql`kind IN ('standard', 'early_bird', 'deposit')`))
    .addColumn('is_standard', 'boolean', (c) => c.notNull().defaultTo(false))
    // The list (total) price; a deposit tier is paid `pay_now_cents` now and `top_up_cents` later.
    .addColumn('price_cents', 'integer', (c) => c.notNull().check(sql`price_cents > 0`))
    .addColumn('pay_now_cents', 'integer', (c) => c.check(sql`pay_now_cents > 0`))
    .addColumn('top_up_cents', 'integer', (c) => c.check(sql`top_up_cents >= 0`))
    .addColumn('stock', 'integer', (c) => c.notNull().check(sql`stock >= 0`))
    .addColumn('display_limit', 'integer', (c) => c.check(sql`display_limit >= 0`))
    .addColumn('starts_at', 'timestamptz')
    .addColumn('ends_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addUniqueConstraint('hw_tiers_sku_tier_key', ['sku_id', 'tier_code'])
    .execute();

  await db.schema.createTable('hw_discount_codes')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    // Stored as typed by the operator, matched case-insensitively (upper case).
    .addColumn('code', 'text', (c) => c.notNull())
    .addColumn('title', 'text')
    .addColumn('discount_cents', 'integer', (c) => c.notNull().check(sql`discount_cents > 0`))
    .addColumn('max_uses', 'integer', (c) => c.check(sql`max_uses >= 0`))
    // Slots held by open orders and used by paid ones; an expired order gives its slot back.
    .addColumn('used_count', 'integer', (c) => c.notNull().defaultTo(0).check(sql`used_count >= 0`))
    .addColumn('per_person_limit', 'integer', (c) => c.check(sql`per_person_limit >= 1`))
    .addColumn('min_amount_cents', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('starts_at', 'timestamptz')
    .addColumn('expires_at', 'timestamptz')
    .addColumn('sku_id', 'uuid', (c) => c.references('hw_skus.id'))
    .addColumn('tier_code', 'text')
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('active').check(sql`status IN ('active', 'disabled', 'expired')`))
    .addColumn('kind', 'text', (c) => c.notNull().defaultTo('standard').check(sql`kind IN ('standard', 'friend')`))
    // A friend code (issue "Hardware sales II") is derived from one paid order, once.
    .addColumn('source_order_id', 'uuid', (c) => c.unique())
    .addColumn('creator_user_id', 'uuid', (c) => c.references('users.id'))
    // Fixed at creation (e.g. a friend code's split) and copied into each order's discount snapshot.
    .addColumn('metadata', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();
  await sql`CREATE UNIQUE INDEX hw_discount_codes_code_key ON hw_discount_codes (upper(code))`.execute(db);

  await db.schema.createTable('hw_orders')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('order_no', 'text', (c) => c.notNull().unique())
    // One payment number per order (`HWSP…`): paying twice reuses it, so one order never has two
    // live channel orders; the channel's `out_trade_no`.
    .addColumn('payment_no', 'text', (c) => c.notNull().unique())
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id'))
    // The verified phone the buyer ordered with (phone token or the account's phone), if any.
    .addColumn('phone', 'text')
    .addColumn('sku_id', 'uuid', (c) => c.notNull().references('hw_skus.id'))
    .addColumn('tier_id', 'uuid', (c) => c.notNull().references('hw_tiers.id'))
    .addColumn('sku', 'text', (c) => c.notNull())
    .addColumn('tier_code', 'text', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('original_amount_cents', 'integer', (c) => c.notNull())
    .addColumn('discount_cents', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('final_amount_cents', 'integer', (c) => c.notNull().check(sql`final_amount_cents > 0`))
    .addColumn('discount_code_id', 'uuid', (c) => c.references('hw_discount_codes.id'))
    .addColumn('discount_snapshot', 'jsonb')
    .addColumn('payment_status', 'text', (c) => c.notNull().defaultTo('unpaid').check(sql`payment_status IN ('unpaid', 'paid', 'refunded', 'closed')`))
    .addColumn('fulfillment_status', 'text', (c) => c.notNull().defaultTo('not_paid')
      .check(sql`fulfillment_status IN ('not_paid', 'awaiting_stock', 'preparing', 'shipped', 'delivered', 'cancelled')`))
    .addColumn('order_status', 'text', (c) => c.notNull().defaultTo('open').check(sql`order_status IN ('open', 'shipped', 'delivered', 'cancelled')`))
    .addColumn('refund_status', 'text', (c) => c.check(sql`refund_status IN ('processing', 'succeeded', 'abnormal', 'closed')`))
    .addColumn('address', 'jsonb', (c) => c.notNull())
    // Bumped on every address change: a change made against an older version is refused (409).
    .addColumn('address_version', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('customer_note', 'text')
    // The operator's note: never in a user-facing response.
    .addColumn('operator_note', 'text')
    .addColumn('carrier', 'text')
    .addColumn('tracking_no', 'text')
    .addColumn('transaction_id', 'text')
    .addColumn('channel', 'text')
    .addColumn('utm', 'jsonb')
    .addColumn('lang', 'text')
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('paid_at', 'timestamptz')
    .addColumn('shipped_at', 'timestamptz')
    .addColumn('delivered_at', 'timestamptz')
    .addColumn('cancelled_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();
  await db.schema.createIndex('hw_orders_user_idx').on('hw_orders').columns(['user_id', 'created_at']).execute();
  await db.schema.createIndex('hw_orders_phone_idx').on('hw_orders').column('phone').execute();

  await db.schema.createTable('hw_order_items')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('order_id', 'uuid', (c) => c.notNull().references('hw_orders.id').onDelete('cascade'))
    .addColumn('sku', 'text', (c) => c.notNull())
    .addColumn('tier_code', 'text', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('quantity', 'integer', (c) => c.notNull().defaultTo(1))
    // The tier's list price: discounts live on the order only.
    .addColumn('list_price_cents', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('hw_order_items_order_idx').on('hw_order_items').column('order_id').execute();

  // A code slot per order: `held` while the order is open, `used` once paid, `released` when the
  // order expired (its slot counts again). The per-person limit counts slots not released.
  await db.schema.createTable('hw_code_redemptions')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('code_id', 'uuid', (c) => c.notNull().references('hw_discount_codes.id'))
    .addColumn('order_id', 'uuid', (c) => c.notNull().unique().references('hw_orders.id'))
    .addColumn('user_id', 'uuid', (c) => c.notNull())
    .addColumn('phone', 'text')
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('held').check(sql`status IN ('held', 'used', 'released')`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addColumn('released_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('hw_code_redemptions_code_idx').on('hw_code_redemptions').columns(['code_id', 'user_id']).execute();

  // Every verified channel notification, once: unique on the channel's own id.
  await db.schema.createTable('hw_payment_events')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('payment_no', 'text')
    .addColumn('refund_no', 'text')
    .addColumn('resource', 'jsonb', (c) => c.notNull())
    .addColumn('received_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addUniqueConstraint('hw_payment_events_event_key', ['provider', 'event_id'])
    .execute();

  await db.schema.createTable('hw_refunds')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('refund_no', 'text', (c) => c.notNull().unique())
    .addColumn('order_id', 'uuid', (c) => c.notNull().references('hw_orders.id'))
    .addColumn('amount_cents', 'integer', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('processing').check(sql`status IN ('processing', 'succeeded', 'abnormal', 'closed')`))
    .addColumn('reason', 'text')
    .addColumn('channel_refund_id', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addColumn('completed_at', 'timestamptz')
    .execute();
  // At most one refund in flight or done per order.
  await sql`CREATE UNIQUE INDEX hw_refunds_live_key ON hw_refunds (order_id) WHERE status IN ('processing', 'succeeded')`.execute(db);

  await db.schema.createTable('hw_entitlements')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    // Created once per paid order, however many times payment is reported.
    .addColumn('order_id', 'uuid', (c) => c.notNull().unique().references('hw_orders.id'))
    .addColumn('user_id', 'uuid', (c) => c.notNull())
    .addColumn('sku', 'text', (c) => c.notNull())
    .addColumn('tier_code', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('active').check(sql`status IN ('active', 'reclaimed')`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addColumn('reclaimed_at', 'timestamptz')
    .execute();

  // The order's timeline and audit trail: `user_visible` rows are the buyer's timeline.
  await db.schema.createTable('hw_order_events')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('order_id', 'uuid', (c) => c.notNull().references('hw_orders.id').onDelete('cascade'))
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull().check(sql`source IN ('user', 'system', 'operator', 'channel')`))
    .addColumn('user_visible', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('detail', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();
  await db.schema.createIndex('hw_order_events_order_idx').on('hw_order_events').columns(['order_id', 'id']).execute();

  // Phone login: one-time codes stored as hashes, and the short-lived phone tokens they issue.
  await db.schema.createTable('phone_otps')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('phone', 'text', (c) => c.notNull())
    .addColumn('purpose', 'text', (c) => c.notNull().check(sql`purpose IN ('login', 'bind')`))
    .addColumn('code_hash', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('requester_ip', 'text')
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('consumed_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();
  await db.schema.createIndex('phone_otps_phone_idx').on('phone_otps').columns(['phone', 'created_at']).execute();
  await db.schema.createIndex('phone_otps_ip_idx').on('phone_otps').columns(['requester_ip', 'created_at']).execute();

  await db.schema.createTable('phone_tokens')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('phone', 'text', (c) => c.notNull())
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();

  // The development SMS provider's outbox (`sms outbox`): what a real provider would have sent.
  await db.schema.createTable('sms_outbox')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('phone', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();
  await db.schema.createIndex('sms_outbox_phone_idx').on('sms_outbox').columns(['phone', 'id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of [
    'sms_outbox', 'phone_tokens', 'phone_otps', 'hw_order_events', 'hw_entitlements', 'hw_refunds', 'hw_payment_events',
    'hw_code_redemptions', 'hw_order_items', 'hw_orders', 'hw_discount_codes', 'hw_tiers', 'hw_skus',
  ]) await db.schema.dropTable(table).ifExists().execute();
}
