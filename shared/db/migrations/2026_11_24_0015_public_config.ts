import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// Public configuration and downloads (docs/public-config.md, spec §4.10), and the price list the
// public endpoints show (billing, spec §2.17–2.18). Client config rows live in `site_settings`
// (`client.<group>`), so they need no table here.
// - `board_assets`: board firmware and board app installers, registered by `asset register`. The
//   object's storage key is rebuilt from (kind, target, sha256), never stored or taken from a caller.
// - `firmware_files`: device firmware (`asset register-firmware`), handed out as signed URLs.
// - `bluetooth_filters`: one row per device-name prefix.
// - `billing_prices`, `billing_payment_methods`: what `price create` / `payment-method set` write.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createTable('board_assets')
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind IN ('board-firmware', 'board-app')`))
    // The channel (`stable`, `beta`) of firmware, the platform of an app.
    .addColumn('target', 'text', (c) => c.notNull())
    .addColumn('sha256', 'text', (c) => c.notNull().check(sql`sha256 ~ '^[0-9a-f]{64}$'`))
    .addColumn('file_name', 'text', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull().check(sql`size >= 0`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('board_assets_pkey', ['kind', 'target', 'sha256', 'file_name'])
    .execute();

  await db.schema.createTable('firmware_files')
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('module', 'text', (c) => c.notNull().check(sql`module IN ('main', 'wifi')`))
    .addColumn('file_name', 'text', (c) => c.notNull())
    .addColumn('sha256', 'text', (c) => c.notNull().check(sql`sha256 ~ '^[0-9a-f]{64}$'`))
    .addColumn('size', 'bigint', (c) => c.notNull().check(sql`size >= 0`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('firmware_files_pkey', ['model', 'module', 'file_name'])
    .execute();

  await db.schema.createTable('bluetooth_filters')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('name_prefix', 'text', (c) => c.notNull().unique())
    .addColumn('product_model_id', 'text', (c) => c.notNull())
    .addColumn('model_name', 'text', (c) => c.notNull())
    .addColumn('generation', 'text', (c) => c.check(sql`generation IN ('gen1', 'gen2')`))
    .addColumn('role', 'text', (c) => c.notNull().defaultTo('full').check(sql`role IN ('full', 'upgrade_only')`))
    .addColumn('requires_inventory_check', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema.createTable('billing_prices')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('product_type', 'text', (c) => c.notNull().check(sql`product_type IN ('credits', 'subscription')`))
    .addColumn('product_code', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    // Minor units (cents, fen) of `currency`.
    .addColumn('amount', 'bigint', (c) => c.notNull().check(sql`amount >= 0`))
    .addColumn('currency', 'text', (c) => c.notNull().check(sql`currency ~ '^[A-Z]{3}$'`))
    // Whole credits the price grants (× 1000 milli-credits).
    .addColumn('credits', 'bigint', (c) => c.notNull().defaultTo(0).check(sql`credits >= 0`))
    .addColumn('billing_period', 'text', (c) => c.notNull().defaultTo('one_time').check(sql`billing_period IN ('one_time', 'month', 'year')`))
    .addColumn('is_featured', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('active', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('billing_prices_currency_idx').on('billing_prices').columns(['currency', 'active']).execute();

  await db.schema.createTable('billing_payment_methods')
    .addColumn('id', 'text', (c) => c.primaryKey().check(sql`id ~ '^[a-z0-9_-]{1,64}$'`))
    .addColumn('name', 'text', (c) => c.notNull())
    // Upper-case ISO 4217 codes.
    .addColumn('currencies', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['billing_payment_methods', 'billing_prices', 'bluetooth_filters', 'firmware_files', 'board_assets']) {
    await db.schema.dropTable(table).ifExists().execute();
  }
}
