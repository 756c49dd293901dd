import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// The publication realtime's change capture reads (issue 37, docs/realtime.md "Row changes"): the
// base tables of the contract's relations except audit_logs and site_settings. The views read
// through `grants` → oauth_grants, `payment_orders` → billing_orders, `project_schedules` →
// schedules. Replica identity stays the default (the primary key): a delete carries the key only,
// as the contract says, and an update's old row is not written to the log twice.

const TABLES = [
  'subscriptions', 'credit_balances', 'credit_transactions', 'billing_rules', 'model_provider_costs',
  'oauth_grants', 'api_keys', 'documents', 'deployments', 'projects', 'files', 'team_members', 'runs',
  'billing_orders', 'schedules', 'romp_messages', 'assets_sessions', 'assets_items',
];

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql.raw(`CREATE PUBLICATION realtime_changes FOR TABLE ${TABLES.map((t) => `public.${t}`).join(', ')}`).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP PUBLICATION IF EXISTS realtime_changes`.execute(db);
}
