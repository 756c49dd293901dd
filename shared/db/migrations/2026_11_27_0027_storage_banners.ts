import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// Issue 36, backend part (docs/billing.md "Price rules", docs/storage.md "Data API storage"):
// - billing_rules is the source of the run prices now: a write (data API, CLI or psql) notifies
//   running processes on the site-settings channel under the key `billing.rules`, which every API
//   and worker already follows, so their cached price list is dropped at once; and the table refuses
//   keys and values the service would refuse (the same rules as shared/billing/billing-rules.ts).
// - storage_objects: the objects of the data API's storage buckets (bucket `banners`), their owner
//   and where their bytes are in the object store.

export async function up(db: Kysely<unknown>): Promise<void> {
  // Immutable (pure functions of their arguments), so a CHECK may call them; the subquery is why
  // they are functions. A price is a whole, non-negative number of milli-credits (a safe integer).
  await sql`
    CREATE FUNCTION billing_price_ok(price jsonb) RETURNS boolean
    LANGUAGE sql IMMUTABLE AS $$
      SELECT jsonb_typeof(price) = 'number' AND price::numeric >= 0 AND price::numeric = trunc(price::numeric)
        AND price::numeric <= 9007199254740991
    $$`.execute(db);
  await sql`
    CREATE FUNCTION billing_rule_value_ok(rule_key text, value jsonb) RETURNS boolean
    LANGUAGE sql IMMUTABLE AS $$
      SELECT CASE
        WHEN rule_key IN ('runBaseMilli', 'llmPer1kTokensMilli') THEN public.billing_price_ok(value)
        WHEN rule_key = 'llmModelPer1kTokensMilli' THEN jsonb_typeof(value) = 'object'
          AND NOT EXISTS (SELECT 1 FROM jsonb_each(value) e WHERE e.key = '' OR NOT public.billing_price_ok(e.value))
        ELSE false
      END
    $$`.execute(db);
  // NOT VALID: rows copied from the setting by 0022 are not re-checked (a bad one would stop the
  // migration); the readers skip such a row's key and use its default. Every new write is checked.
  await sql`ALTER TABLE billing_rules
    ADD CONSTRAINT billing_rules_known_key CHECK (rule_key IN ('runBaseMilli', 'llmPer1kTokensMilli', 'llmModelPer1kTokensMilli')) NOT VALID,
    ADD CONSTRAINT billing_rules_valid_value CHECK (billing_rule_value_ok(rule_key, value)) NOT VALID`.execute(db);
  await sql`
    CREATE FUNCTION notify_billing_rules_changed() RETURNS trigger AS $$
    BEGIN
      PERFORM pg_notify('site_settings_changed', 'billing.rules');
      RETURN NULL;
    END;
    $$ LANGUAGE plpgsql`.execute(db);
  // Once a statement, not once a row: the readers drop the whole price list either way.
  await sql`
    CREATE TRIGGER billing_rules_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON billing_rules
    FOR EACH STATEMENT EXECUTE FUNCTION notify_billing_rules_changed()`.execute(db);

  await sql`
    CREATE TABLE storage_objects (
      id uuid PRIMARY KEY,
      bucket_id text NOT NULL,
      name text NOT NULL CHECK (length(name) BETWEEN 1 AND 1024),
      owner_id uuid NOT NULL REFERENCES users(id),
      storage_key text NOT NULL UNIQUE,
      content_type text NOT NULL,
      cache_control text NOT NULL,
      size bigint NOT NULL CHECK (size >= 0),
      sha256 text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (bucket_id, name)
    )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE storage_objects`.execute(db);
  await sql`DROP TRIGGER billing_rules_changed ON billing_rules`.execute(db);
  await sql`DROP FUNCTION notify_billing_rules_changed()`.execute(db);
  await sql`ALTER TABLE billing_rules DROP CONSTRAINT billing_rules_valid_value, DROP CONSTRAINT billing_rules_known_key`.execute(db);
  await sql`DROP FUNCTION billing_rule_value_ok(text, jsonb)`.execute(db);
  await sql`DROP FUNCTION billing_price_ok(jsonb)`.execute(db);
}
