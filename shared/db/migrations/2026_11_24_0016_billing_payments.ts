import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// General payments for credits (docs/billing.md "Buying credits", CONTRACTS.md "Billing"), apart
// from the hardware orders (`hw_*`):
// - `billing_orders`: one checkout of a price by a team, with the price's amount, currency and
//   credits copied in (a later price change never changes an order). `provider_order_id` is our
//   order number at the channel (`WFB…`; hardware's are `HWSP…`).
// - `billing_payment_events`: every verified callback, once per (provider, event id); what it did.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createTable('billing_orders')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('team_id', 'uuid', (c) => c.notNull().references('teams.id'))
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id'))
    .addColumn('price_id', 'uuid', (c) => c.notNull().references('billing_prices.id'))
    .addColumn('provider', 'text', (c) => c.notNull().check(sql`provider IN ('chan_a', 'chan_b', 'paddle', 'manual', 'mock')`))
    .addColumn('provider_order_id', 'text', (c) => c.notNull().unique())
    .addColumn('amount', 'bigint', (c) => c.notNull().check(sql`amount > 0`))
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('credits', 'bigint', (c) => c.notNull())
    .addColumn('product_type', 'text', (c) => c.notNull())
    .addColumn('billing_period', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('pending').check(sql`status IN ('pending', 'paid', 'failed', 'refunded')`))
    .addColumn('pay_url', 'text')
    // The channel's own id of the payment (transaction id), once known.
    .addColumn('channel_reference', 'text')
    .addColumn('refunded_amount', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('paid_at', 'timestamptz')
    .addColumn('failed_at', 'timestamptz')
    .addColumn('refunded_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('billing_orders_team_idx').on('billing_orders').columns(['team_id', 'created_at']).execute();
  // Some deliveries name only the channel's payment (a Paddle adjustment names its transaction).
  await db.schema.createIndex('billing_orders_channel_reference_idx').on('billing_orders').columns(['provider', 'channel_reference']).execute();

  await db.schema.createTable('billing_payment_events')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('order_id', 'uuid', (c) => c.references('billing_orders.id'))
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind IN ('paid', 'failed', 'refunded')`))
    // What the event did: applied, or why it changed nothing.
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('amount', 'bigint')
    .addColumn('currency', 'text')
    .addColumn('payload', 'jsonb', (c) => c.notNull())
    .addColumn('received_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('billing_payment_events_provider_event_key', ['provider', 'event_id'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('billing_payment_events').ifExists().execute();
  await db.schema.dropTable('billing_orders').ifExists().execute();
}
