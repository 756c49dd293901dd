import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// Paying a hardware order (docs/hardware-sales.md "Paying", spec §4.8):
// - `chan_a_official_accounts`: the official account (AppID and sealed AppSecret) an OAuth client id
//   uses for in-app (JSAPI) pay and the JS-SDK signature; set by `chan-a account set`.
// - on `hw_orders`, the order's open payment: which channel and scene it was opened with and the
//   answer given then, so paying again returns the same answer and never opens a second channel order.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createTable('chan_a_official_accounts')
    .addColumn('client_id', 'text', (c) => c.primaryKey().references('oauth_clients.client_id').onDelete('cascade'))
    .addColumn('app_id', 'text', (c) => c.notNull())
    // SecretKeyRing-sealed, with the client id as associated data.
    .addColumn('app_secret_sealed', 'text', (c) => c.notNull())
    // JS-SDK safe domains (host names) of the account.
    .addColumn('safe_domains', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema.alterTable('hw_orders')
    .addColumn('pay_provider', 'text', (c) => c.check(sql`pay_provider IN ('chan_a', 'chan_b')`))
    .addColumn('pay_scene', 'text')
    .addColumn('pay_answer', 'jsonb')
    .addColumn('pay_requested_at', 'timestamptz')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('hw_orders')
    .dropColumn('pay_provider').dropColumn('pay_scene').dropColumn('pay_answer').dropColumn('pay_requested_at')
    .execute();
  await db.schema.dropTable('chan_a_official_accounts').ifExists().execute();
}
