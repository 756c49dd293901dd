import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// The billing relations the frontend reads through the data API (CONTRACTS.md "Frontend data
// access"): a team's subscription, the price rules as rows (they were the site setting
// `billing.rules`; its current value moves here, one row a key), the model providers' token costs,
// and the auto top-up preferences of a credit balance. Also who is a platform administrator
// (`user set-admin`): they review OAuth apps and manage the price relations.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE users ADD COLUMN is_platform_admin boolean NOT NULL DEFAULT false`.execute(db);
  await sql`
    CREATE TABLE subscriptions (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      team_id uuid NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
      plan_code text NOT NULL,
      status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'canceled', 'past_due')),
      current_period_start timestamptz NOT NULL DEFAULT now(),
      current_period_end timestamptz NOT NULL DEFAULT now() + interval '1 month',
      cancel_at_period_end boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db);
  // One current subscription a team: a canceled one stays as history.
  await sql`CREATE UNIQUE INDEX subscriptions_one_live_per_team ON subscriptions (team_id) WHERE status <> 'canceled'`.execute(db);

  await sql`
    CREATE TABLE billing_rules (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      rule_key text NOT NULL,
      value jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      deleted_at timestamptz
    )`.execute(db);
  await sql`CREATE UNIQUE INDEX billing_rules_live_key ON billing_rules (rule_key) WHERE deleted_at IS NULL`.execute(db);
  // The setting's current value, one row a key; the setting itself stays readable for one release
  // (shared/billing reads the table from now on).
  await sql`
    INSERT INTO billing_rules (rule_key, value)
    SELECT e.key, e.value FROM site_settings s, jsonb_each(s.value::jsonb) e
    WHERE s.key = 'billing.rules' AND jsonb_typeof(s.value::jsonb) = 'object'`.execute(db);

  await sql`
    CREATE TABLE model_provider_costs (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      provider text NOT NULL CHECK (length(provider) BETWEEN 1 AND 100),
      model text NOT NULL CHECK (length(model) BETWEEN 1 AND 200),
      input_cost_per_mtok numeric(14, 6) NOT NULL CHECK (input_cost_per_mtok >= 0),
      output_cost_per_mtok numeric(14, 6) NOT NULL CHECK (output_cost_per_mtok >= 0),
      currency text NOT NULL DEFAULT 'USD' CHECK (currency ~ '^[A-Z]{3}$'),
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (provider, model)
    )`.execute(db);

  await sql`
    ALTER TABLE credit_balances
      ADD COLUMN auto_topup_enabled boolean NOT NULL DEFAULT false,
      ADD COLUMN auto_topup_threshold_milli bigint NOT NULL DEFAULT 0 CHECK (auto_topup_threshold_milli >= 0),
      ADD COLUMN auto_topup_amount_milli bigint NOT NULL DEFAULT 0 CHECK (auto_topup_amount_milli >= 0)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE credit_balances DROP COLUMN auto_topup_enabled, DROP COLUMN auto_topup_threshold_milli, DROP COLUMN auto_topup_amount_milli`.execute(db);
  await sql`DROP TABLE model_provider_costs`.execute(db);
  await sql`DROP TABLE billing_rules`.execute(db);
  await sql`DROP TABLE subscriptions`.execute(db);
  await sql`ALTER TABLE users DROP COLUMN is_platform_admin`.execute(db);
}
