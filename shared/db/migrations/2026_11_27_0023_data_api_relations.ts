import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// The data API's relations other than billing's (CONTRACTS.md "Frontend data access"): the
// tables the frontend writes to (audit_logs, romp_messages, assets_sessions, assets_items), the
// names the spec uses for what exists under other names (grants, payment_orders,
// project_schedules: views over oauth_grants, billing_orders, schedules) and runs.project_id.
// Who may read and write them is migration 0024 (roles, policies, privileges); the views here are
// `security_invoker`, so a caller reading one is held to the row-level security of its base table.
// audit_logs_with_names, which must show rows its caller cannot read from audit_logs, is 0024's.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE audit_logs (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      team_id uuid NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
      actor_id uuid NOT NULL REFERENCES users(id),
      action text NOT NULL CHECK (length(action) BETWEEN 1 AND 200),
      target_type text CHECK (length(target_type) BETWEEN 1 AND 100),
      target_id uuid,
      metadata jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object' AND pg_column_size(metadata) <= 65536),
      created_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db);
  await sql`CREATE INDEX audit_logs_team_created_idx ON audit_logs (team_id, created_at DESC)`.execute(db);

  // The OAuth grants a user gave (one row per app and user; revoked ones stay as history).
  await sql`
    CREATE VIEW grants WITH (security_invoker = true) AS
    SELECT id, user_id, app_id, scopes, created_at, revoked_at FROM oauth_grants`.execute(db);
  await sql`CREATE INDEX oauth_grants_user_idx ON oauth_grants (user_id)`.execute(db);

  // The billing orders of spec 4.7 without the payment channel's internals (provider order id,
  // pay URL, channel reference).
  await sql`
    CREATE VIEW payment_orders WITH (security_invoker = true) AS
    SELECT id, team_id, user_id, provider, status, amount, currency, credits, product_type, billing_period,
      refunded_amount, paid_at, created_at, updated_at
    FROM billing_orders`.execute(db);

  // The schedules of spec 2.1.
  await sql`
    CREATE VIEW project_schedules WITH (security_invoker = true) AS
    SELECT id, project_id, team_id, deployment_id, name, description, cron_expression, timezone, trigger_config,
      enabled, timeout_ms, max_retries, created_by, created_at, updated_at, deleted_at
    FROM schedules`.execute(db);

  // A run's project, so the frontend lists and follows a project's runs. The run insert
  // (insertChargedRun) passes the deployment's project id, which the admission path already holds:
  // no lookup on the run path. Any other inserter that leaves it out gets it from the deployment
  // by a trigger whose WHEN clause keeps it from even being called when the id is given.
  await sql`ALTER TABLE runs ADD COLUMN project_id uuid`.execute(db);
  await sql`UPDATE runs r SET project_id = d.project_id FROM deployments d WHERE d.id = r.deployment_id`.execute(db);
  await sql`
    CREATE FUNCTION runs_project_from_deployment() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      SELECT d.project_id INTO NEW.project_id FROM deployments d WHERE d.id = NEW.deployment_id;
      RETURN NEW;
    END $$`.execute(db);
  await sql`
    CREATE TRIGGER runs_project_from_deployment BEFORE INSERT ON runs
    FOR EACH ROW WHEN (NEW.project_id IS NULL) EXECUTE FUNCTION runs_project_from_deployment()`.execute(db);
  await sql`ALTER TABLE runs ALTER COLUMN project_id SET NOT NULL`.execute(db);
  await sql`CREATE INDEX runs_project_idx ON runs (project_id, created_at)`.execute(db);

  // Messages between an agent and its owner on a binding (spec 2.6/2.7).
  await sql`
    CREATE TABLE romp_messages (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      binding_id uuid NOT NULL REFERENCES agent_bindings(id) ON DELETE CASCADE,
      sender_user_id uuid NOT NULL REFERENCES users(id),
      body text NOT NULL CHECK (length(body) BETWEEN 1 AND 20000),
      created_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db);
  await sql`CREATE INDEX romp_messages_binding_created_idx ON romp_messages (binding_id, created_at)`.execute(db);

  // Asset sessions (a batch of files a member gathers in a project) and their items. An item's
  // team and project are its session's: the composite foreign key makes that a fact, and the
  // insert trigger fills them from the session when the client leaves them out.
  await sql`
    CREATE TABLE assets_sessions (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      team_id uuid NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
      project_id uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
      status text NOT NULL DEFAULT 'active' CHECK (status ~ '^[a-z][a-z0-9_]{0,31}$'),
      created_by uuid REFERENCES users(id),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (id, team_id, project_id)
    )`.execute(db);
  await sql`CREATE INDEX assets_sessions_team_created_idx ON assets_sessions (team_id, created_at)`.execute(db);
  await sql`
    CREATE TABLE assets_items (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      session_id uuid NOT NULL,
      team_id uuid NOT NULL,
      project_id uuid NOT NULL,
      file_id uuid REFERENCES files(id) ON DELETE SET NULL,
      status text NOT NULL DEFAULT 'pending' CHECK (status ~ '^[a-z][a-z0-9_]{0,31}$'),
      created_by uuid REFERENCES users(id),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      FOREIGN KEY (session_id, team_id, project_id) REFERENCES assets_sessions (id, team_id, project_id) ON DELETE CASCADE ON UPDATE CASCADE
    )`.execute(db);
  await sql`CREATE INDEX assets_items_session_idx ON assets_items (session_id, created_at)`.execute(db);
  await sql`CREATE INDEX assets_items_team_idx ON assets_items (team_id)`.execute(db);
  await sql`
    CREATE FUNCTION assets_items_from_session() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.team_id IS NULL OR NEW.project_id IS NULL THEN
        SELECT coalesce(NEW.team_id, s.team_id), coalesce(NEW.project_id, s.project_id) INTO NEW.team_id, NEW.project_id
        FROM assets_sessions s WHERE s.id = NEW.session_id;
      END IF;
      RETURN NEW;
    END $$`.execute(db);
  await sql`
    CREATE TRIGGER assets_items_from_session BEFORE INSERT ON assets_items
    FOR EACH ROW EXECUTE FUNCTION assets_items_from_session()`.execute(db);

  // updated_at follows every change a writer did not date itself (the relations the data API
  // writes that have the column; not credit_balances, whose every run charge dates itself).
  await sql`
    CREATE FUNCTION touch_updated_at() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.updated_at IS NOT DISTINCT FROM OLD.updated_at THEN NEW.updated_at := now(); END IF;
      RETURN NEW;
    END $$`.execute(db);
  for (const table of ['assets_sessions', 'assets_items', 'billing_rules', 'model_provider_costs', 'site_settings']) {
    await sql`CREATE TRIGGER ${sql.raw(`${table}_touch_updated_at`)} BEFORE UPDATE ON ${sql.table(table)}
      FOR EACH ROW EXECUTE FUNCTION touch_updated_at()`.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['assets_sessions', 'assets_items', 'billing_rules', 'model_provider_costs', 'site_settings']) {
    await sql`DROP TRIGGER IF EXISTS ${sql.raw(`${table}_touch_updated_at`)} ON ${sql.table(table)}`.execute(db);
  }
  await sql`DROP FUNCTION IF EXISTS touch_updated_at()`.execute(db);
  await sql`DROP TABLE IF EXISTS assets_items`.execute(db);
  await sql`DROP FUNCTION IF EXISTS assets_items_from_session()`.execute(db);
  await sql`DROP TABLE IF EXISTS assets_sessions`.execute(db);
  await sql`DROP TABLE IF EXISTS romp_messages`.execute(db);
  await sql`DROP INDEX IF EXISTS runs_project_idx`.execute(db);
  await sql`DROP TRIGGER IF EXISTS runs_project_from_deployment ON runs`.execute(db);
  await sql`DROP FUNCTION IF EXISTS runs_project_from_deployment()`.execute(db);
  await sql`ALTER TABLE runs DROP COLUMN IF EXISTS project_id`.execute(db);
  await sql`DROP VIEW IF EXISTS project_schedules`.execute(db);
  await sql`DROP VIEW IF EXISTS payment_orders`.execute(db);
  await sql`DROP INDEX IF EXISTS oauth_grants_user_idx`.execute(db);
  await sql`DROP VIEW IF EXISTS grants`.execute(db);
  await sql`DROP TABLE IF EXISTS audit_logs`.execute(db);
}
