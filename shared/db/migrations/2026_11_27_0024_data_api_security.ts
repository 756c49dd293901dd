import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// Who may read and write the data API's relations (CONTRACTS.md "Frontend data access"), decided
// by PostgreSQL itself: the REST engine runs each request's statement after `SET ROLE anon` (the
// anon key alone) or `SET ROLE authenticated` (a user JWT) with the JWT's claims in
// `request.jwt.claims`, and the policies here read the caller as `auth.uid()`.
// - Row-level security is ENABLED, not FORCED, on every relation of the contract: the service's
//   own connection owns the tables and bypasses it, so its queries are planned exactly as before.
// - Policies call the access rule of migration 0021 with `(select auth.uid())` (evaluated once per
//   statement), through `access_reader_team_ids`, which adds what the data API counts as a member
//   beyond 0021: an agent's virtual user is a member of its agent's team (CONTRACTS "Details").
// - Column privileges hide secrets (api_keys.key_hash, files.storage_key, a payment's channel
//   internals) and narrow writes to the contract's columns; anon may SELECT the readable
//   relations so that it gets 0 rows from RLS (not a permission error), and writes nothing.

/** Every relation (table or base table of a view) on which RLS is enabled. */
const securedTables = [
  'subscriptions', 'credit_balances', 'credit_transactions', 'billing_rules', 'model_provider_costs', 'oauth_grants',
  'audit_logs', 'api_keys', 'site_settings', 'documents', 'deployments', 'projects', 'files', 'team_members', 'runs',
  'billing_orders', 'schedules', 'romp_messages', 'assets_sessions', 'assets_items',
] as const;
const views = ['grants', 'payment_orders', 'project_schedules', 'audit_logs_with_names'] as const;

// Policy expressions. `(SELECT auth.uid())` is an init plan: evaluated once per statement.
const me = '(SELECT auth.uid())';
/** The row's team is one the caller reads as a member (owner, admin, member, or the team's agent). */
const member = (teamColumn: string) => `${teamColumn} IN (SELECT access_reader_team_ids(${me}))`;
const admin = (teamColumn: string) => `access_team_level(${teamColumn}, ${me}) = 'admin'`;
const platform = `(SELECT access_is_platform_admin(${me}))`;

export async function up(db: Kysely<unknown>): Promise<void> {
  // Roles are cluster-wide and test databases migrate concurrently on one cluster: the loser of a
  // race gets duplicate_object (or unique_violation from the catalog index), both mean "exists".
  for (const role of ['anon', 'authenticated']) {
    await sql.raw(`
      DO $$ BEGIN
        CREATE ROLE ${role} NOLOGIN NOINHERIT;
      EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
      END $$`).execute(db);
  }
  // The service's own user switches to them per request (SET ROLE needs membership).
  await sql.raw(`
    DO $$ BEGIN
      EXECUTE format('GRANT anon, authenticated TO %I', current_user);
    EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
    END $$`).execute(db);

  // auth.uid(), auth.role(), auth.jwt(): the request's identity, as the platform's SDK expects.
  await sql`CREATE SCHEMA IF NOT EXISTS auth`.execute(db);
  await sql`
    CREATE FUNCTION auth.jwt() RETURNS jsonb LANGUAGE sql STABLE AS $$
      SELECT coalesce(nullif(current_setting('request.jwt.claims', true), '')::jsonb, '{}'::jsonb)
    $$`.execute(db);
  // A subject that is not a uuid (no such user) is nobody, not an error.
  await sql`
    CREATE FUNCTION auth.uid() RETURNS uuid LANGUAGE sql STABLE AS $$
      SELECT CASE WHEN s ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN s::uuid END
      FROM (SELECT nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub' AS s) c
    $$`.execute(db);
  await sql`
    CREATE FUNCTION auth.role() RETURNS text LANGUAGE sql STABLE AS $$
      SELECT coalesce(auth.jwt() ->> 'role', CASE WHEN current_user IN ('anon', 'authenticated') THEN current_user::text END)
    $$`.execute(db);
  await sql`GRANT USAGE ON SCHEMA auth TO anon, authenticated`.execute(db);
  await sql`GRANT USAGE ON SCHEMA public TO anon, authenticated`.execute(db);
  await sql`GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA auth TO anon, authenticated`.execute(db);

  // The data API's additions to the access rule, beside 0021's and built the same way.
  await sql`
    CREATE FUNCTION access_is_platform_admin(p_user uuid) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
      SELECT coalesce((SELECT is_platform_admin FROM users WHERE id = p_user), false)
    $$`.execute(db);
  await sql`
    CREATE FUNCTION access_reader_team_ids(p_user uuid) RETURNS SETOF uuid
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
      SELECT access_member_team_ids(p_user)
      UNION
      SELECT a.team_id FROM agents a JOIN teams t ON t.id = a.team_id
      WHERE a.user_id = p_user AND a.deleted_at IS NULL AND t.deleted_at IS NULL
    $$`.execute(db);
  await sql`CREATE INDEX IF NOT EXISTS agents_user_idx ON agents (user_id)`.execute(db);
  // The live projects of those teams (what access_project_team answers one at a time), as one set:
  // a documents policy hashes it once per statement instead of calling a function per row.
  await sql`
    CREATE FUNCTION access_reader_project_ids(p_user uuid) RETURNS SETOF uuid
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
      SELECT p.id FROM projects p
      WHERE p.team_id IN (SELECT access_reader_team_ids(p_user)) AND p.deleted_at IS NULL
    $$`.execute(db);
  // The bindings the user is a party of (as the owner or as the agent's virtual user).
  await sql`
    CREATE FUNCTION access_binding_ids(p_user uuid) RETURNS SETOF uuid
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
      SELECT id FROM agent_bindings WHERE owner_user_id = p_user
      UNION
      SELECT id FROM agent_bindings WHERE agent_user_id = p_user
    $$`.execute(db);
  // May the user post on the live binding: the agent when can_send, the owner when can_receive.
  await sql`
    CREATE FUNCTION access_binding_may_post(p_binding uuid, p_user uuid) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
      SELECT EXISTS (
        SELECT 1 FROM agent_bindings b
        WHERE b.id = p_binding AND b.deleted_at IS NULL AND b.revoked_at IS NULL
          AND ((b.agent_user_id = p_user AND b.can_send) OR (b.owner_user_id = p_user AND b.can_receive))
      )
    $$`.execute(db);

  // Writers on the data API are the caller: the default fills it, the policies require it.
  await sql`ALTER TABLE audit_logs ALTER COLUMN actor_id SET DEFAULT auth.uid()`.execute(db);
  await sql`ALTER TABLE romp_messages ALTER COLUMN sender_user_id SET DEFAULT auth.uid()`.execute(db);
  await sql`ALTER TABLE assets_sessions ALTER COLUMN created_by SET DEFAULT auth.uid()`.execute(db);
  await sql`ALTER TABLE assets_items ALTER COLUMN created_by SET DEFAULT auth.uid()`.execute(db);

  // The admins' view of their teams' audit trail, with the actor's name. It runs with its owner's
  // rights (audit_logs has no read policy) and filters with the access rule itself;
  // security_barrier keeps a caller's filter functions from seeing rows before that filter.
  await sql`
    CREATE VIEW audit_logs_with_names WITH (security_barrier = true) AS
    SELECT a.id, a.team_id, a.actor_id, a.action, a.target_type, a.target_id, a.metadata, a.created_at,
      u.name AS actor_name, u.email AS actor_email
    FROM audit_logs a LEFT JOIN users u ON u.id = a.actor_id
    WHERE access_team_level(a.team_id, (SELECT auth.uid())) = 'admin'`.execute(db);

  for (const table of securedTables) await sql`ALTER TABLE ${sql.table(table)} ENABLE ROW LEVEL SECURITY`.execute(db);

  const policy = async (table: string, name: string, rule: string) =>
    sql.raw(`CREATE POLICY "${name}" ON ${table} ${rule}`).execute(db);
  const memberReads = ['subscriptions', 'credit_balances', 'credit_transactions', 'api_keys', 'deployments', 'projects', 'files',
    'team_members', 'runs', 'billing_orders', 'schedules', 'assets_sessions', 'assets_items'];
  for (const table of memberReads) {
    await policy(table, 'members read', `FOR SELECT TO authenticated USING (${member('team_id')})`);
  }
  await policy('documents', 'members read', `FOR SELECT TO authenticated USING (project_id IN (SELECT access_reader_project_ids(${me})))`);

  await policy('credit_balances', 'admins update', `FOR UPDATE TO authenticated USING (${admin('team_id')}) WITH CHECK (${admin('team_id')})`);
  await policy('api_keys', 'admins update', `FOR UPDATE TO authenticated USING (${admin('team_id')}) WITH CHECK (${admin('team_id')})`);

  await policy('billing_rules', 'signed-in users read', 'FOR SELECT TO authenticated USING (true)');
  await policy('billing_rules', 'platform inserts', `FOR INSERT TO authenticated WITH CHECK (${platform})`);
  await policy('billing_rules', 'platform updates', `FOR UPDATE TO authenticated USING (${platform}) WITH CHECK (${platform})`);
  for (const table of ['model_provider_costs', 'site_settings']) {
    await policy(table, 'platform reads and writes', `FOR ALL TO authenticated USING (${platform}) WITH CHECK (${platform})`);
  }

  await policy('oauth_grants', 'the user reads', `FOR SELECT TO authenticated USING (user_id = ${me})`);
  await policy('audit_logs', 'members insert as themselves', `FOR INSERT TO authenticated WITH CHECK (actor_id = ${me} AND ${member('team_id')})`);

  await policy('romp_messages', 'parties read', `FOR SELECT TO authenticated USING (binding_id IN (SELECT access_binding_ids(${me})))`);
  await policy('romp_messages', 'parties post as themselves', `FOR INSERT TO authenticated WITH CHECK (sender_user_id = ${me} AND access_binding_may_post(binding_id, ${me}))`);

  // A session's project is one of its team's; an item's file is one of its team's (files' own
  // policy limits the lookup to the caller's teams).
  const sessionProject = `access_project_team(project_id) = team_id`;
  const itemFile = `(file_id IS NULL OR EXISTS (SELECT 1 FROM files f WHERE f.id = file_id AND f.team_id = assets_items.team_id AND f.deleted_at IS NULL))`;
  await policy('assets_sessions', 'members insert', `FOR INSERT TO authenticated WITH CHECK (${member('team_id')} AND ${sessionProject} AND created_by = ${me})`);
  await policy('assets_sessions', 'members update', `FOR UPDATE TO authenticated USING (${member('team_id')}) WITH CHECK (${member('team_id')})`);
  await policy('assets_items', 'members insert', `FOR INSERT TO authenticated WITH CHECK (${member('team_id')} AND ${itemFile} AND created_by = ${me})`);
  await policy('assets_items', 'members update', `FOR UPDATE TO authenticated USING (${member('team_id')}) WITH CHECK (${member('team_id')} AND ${itemFile})`);

  // Privileges: what each role may touch at all (the policies above then choose the rows).
  const grant = async (text: string) => sql.raw(text).execute(db);
  const readable = {
    subscriptions: 'id, team_id, plan_code, status, current_period_start, current_period_end, cancel_at_period_end, created_at, updated_at',
    credit_balances: 'team_id, balance_milli, auto_topup_enabled, auto_topup_threshold_milli, auto_topup_amount_milli, updated_at',
    credit_transactions: 'id, team_id, amount_milli, reason, reference, created_by, created_at',
    billing_rules: 'id, rule_key, value, created_at, updated_at, deleted_at',
    model_provider_costs: 'id, provider, model, input_cost_per_mtok, output_cost_per_mtok, currency, updated_at',
    oauth_grants: 'id, user_id, app_id, scopes, created_at, revoked_at',
    api_keys: 'id, team_id, created_by, name, description, limit_credits, usage_credits, expires_at, last_used_at, created_at, deleted_at',
    site_settings: 'key, value, updated_at',
    documents: 'id, project_id, name, graph, created_by, created_at, updated_at, deleted_at',
    deployments: 'id, document_id, project_id, team_id, version_major, version_minor, visibility, snapshot, api_schema, published_by, created_at, deleted_at',
    projects: 'id, team_id, slug, name, system_purpose, visibility, deletion_locked, created_by, created_at, updated_at, deleted_at',
    files: 'id, project_id, team_id, uploaded_by, api_key_id, size, content_type, original_name, sha256, created_at, deleted_at',
    team_members: 'team_id, user_id, role, created_at',
    runs: 'id, deployment_id, document_id, project_id, team_id, status, trigger_source, user_id, error, created_at, finished_at',
    billing_orders: 'id, team_id, user_id, provider, status, amount, currency, credits, product_type, billing_period, refunded_amount, paid_at, created_at, updated_at',
    schedules: 'id, project_id, team_id, deployment_id, name, description, cron_expression, timezone, trigger_config, enabled, timeout_ms, max_retries, created_by, created_at, updated_at, deleted_at',
    romp_messages: 'id, binding_id, sender_user_id, body, created_at',
    assets_sessions: 'id, team_id, project_id, status, created_by, created_at, updated_at',
    assets_items: 'id, session_id, team_id, project_id, file_id, status, created_by, created_at, updated_at',
  } satisfies Partial<Record<(typeof securedTables)[number], string>>;
  for (const [table, columns] of Object.entries(readable)) await grant(`GRANT SELECT (${columns}) ON ${table} TO anon, authenticated`);
  for (const view of views) await grant(`GRANT SELECT ON ${view} TO anon, authenticated`);

  await grant('GRANT UPDATE (auto_topup_enabled, auto_topup_threshold_milli, auto_topup_amount_milli) ON credit_balances TO authenticated');
  await grant('GRANT INSERT (rule_key, value), UPDATE (rule_key, value, deleted_at) ON billing_rules TO authenticated');
  await grant('GRANT INSERT (provider, model, input_cost_per_mtok, output_cost_per_mtok, currency), UPDATE (provider, model, input_cost_per_mtok, output_cost_per_mtok, currency), DELETE ON model_provider_costs TO authenticated');
  await grant('GRANT INSERT (key, value), UPDATE (key, value), DELETE ON site_settings TO authenticated');
  await grant('GRANT UPDATE (name, description, limit_credits) ON api_keys TO authenticated');
  await grant('GRANT INSERT (team_id, actor_id, action, target_type, target_id, metadata) ON audit_logs TO authenticated');
  await grant('GRANT INSERT (binding_id, sender_user_id, body) ON romp_messages TO authenticated');
  await grant('GRANT INSERT (id, team_id, project_id, status, created_by), UPDATE (status) ON assets_sessions TO authenticated');
  await grant('GRANT INSERT (id, session_id, team_id, project_id, file_id, status, created_by), UPDATE (status, file_id) ON assets_items TO authenticated');

  // RPCs. Both run with their owner's rights and decide access with the rule themselves.
  await sql`
    CREATE FUNCTION get_usage_heatmap(p_team_id uuid, p_days int DEFAULT 90)
    RETURNS TABLE (day text, runs bigint, credits_milli bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public AS $$
    DECLARE
      since timestamptz;
    BEGIN
      IF p_team_id IS NULL OR NOT EXISTS (SELECT 1 FROM access_reader_team_ids(auth.uid()) t WHERE t = p_team_id) THEN
        RAISE EXCEPTION 'permission denied for team %', p_team_id USING ERRCODE = '42501';
      END IF;
      IF p_days IS NULL OR p_days < 1 OR p_days > 366 THEN
        RAISE EXCEPTION 'p_days must be between 1 and 366' USING ERRCODE = '22023';
      END IF;
      -- UTC days: today and the p_days - 1 before it.
      since := (date_trunc('day', now() AT TIME ZONE 'UTC') - make_interval(days => p_days - 1)) AT TIME ZONE 'UTC';
      RETURN QUERY
      WITH r AS (
        SELECT (x.created_at AT TIME ZONE 'UTC')::date AS d, count(*) AS n
        FROM runs x WHERE x.team_id = p_team_id AND x.created_at >= since GROUP BY 1
      ), c AS (
        -- Credits spent: run charges and their refunds, and model tokens.
        SELECT (x.created_at AT TIME ZONE 'UTC')::date AS d, -sum(x.amount_milli)::bigint AS spent
        FROM credit_transactions x
        WHERE x.team_id = p_team_id AND x.created_at >= since AND x.reason IN ('run', 'run_refund', 'llm_tokens')
        GROUP BY 1
      )
      SELECT to_char(coalesce(r.d, c.d), 'YYYY-MM-DD'), coalesce(r.n, 0)::bigint, coalesce(c.spent, 0)::bigint
      FROM r FULL JOIN c ON c.d = r.d
      ORDER BY 1;
    END $$`.execute(db);
  // Soft-deletes the key (the HTTP API looks keys up live, so it stops working at once). A key the
  // caller's teams do not have answers like a missing one; a member who is not an admin gets 42501.
  await sql`
    CREATE FUNCTION delete_api_key(p_key_id uuid) RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public AS $$
    DECLARE
      key_team uuid;
    BEGIN
      SELECT team_id INTO key_team FROM api_keys WHERE id = p_key_id FOR UPDATE;
      IF key_team IS NULL OR NOT EXISTS (SELECT 1 FROM access_reader_team_ids(auth.uid()) t WHERE t = key_team) THEN
        RAISE EXCEPTION 'API key not found' USING ERRCODE = 'P0002';
      END IF;
      IF access_team_level(key_team, auth.uid()) <> 'admin' THEN
        RAISE EXCEPTION 'only the team owner or admin can delete an API key' USING ERRCODE = '42501';
      END IF;
      UPDATE api_keys SET deleted_at = now() WHERE id = p_key_id AND deleted_at IS NULL;
    END $$`.execute(db);
  await sql`GRANT EXECUTE ON FUNCTION get_usage_heatmap(uuid, int), delete_api_key(uuid) TO anon, authenticated`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP FUNCTION IF EXISTS delete_api_key(uuid)`.execute(db);
  await sql`DROP FUNCTION IF EXISTS get_usage_heatmap(uuid, int)`.execute(db);
  for (const table of securedTables) {
    const { rows } = await sql<{ policyname: string }>`SELECT policyname FROM pg_policies WHERE schemaname = 'public' AND tablename = ${table}`.execute(db);
    for (const { policyname } of rows) await sql`DROP POLICY ${sql.raw(`"${policyname}"`)} ON ${sql.table(table)}`.execute(db);
    await sql`ALTER TABLE ${sql.table(table)} DISABLE ROW LEVEL SECURITY`.execute(db);
    await sql`REVOKE ALL ON ${sql.table(table)} FROM anon, authenticated`.execute(db);
  }
  await sql`DROP VIEW IF EXISTS audit_logs_with_names`.execute(db);
  for (const view of views.filter((v) => v !== 'audit_logs_with_names')) await sql`REVOKE ALL ON ${sql.table(view)} FROM anon, authenticated`.execute(db);
  for (const [table, column] of [['audit_logs', 'actor_id'], ['romp_messages', 'sender_user_id'], ['assets_sessions', 'created_by'], ['assets_items', 'created_by']] as const) {
    await sql`ALTER TABLE ${sql.table(table)} ALTER COLUMN ${sql.ref(column)} DROP DEFAULT`.execute(db);
  }
  await sql`DROP FUNCTION IF EXISTS access_binding_may_post(uuid, uuid)`.execute(db);
  await sql`DROP FUNCTION IF EXISTS access_binding_ids(uuid)`.execute(db);
  await sql`DROP FUNCTION IF EXISTS access_reader_project_ids(uuid)`.execute(db);
  await sql`DROP INDEX IF EXISTS agents_user_idx`.execute(db);
  await sql`DROP FUNCTION IF EXISTS access_reader_team_ids(uuid)`.execute(db);
  await sql`DROP FUNCTION IF EXISTS access_is_platform_admin(uuid)`.execute(db);
  await sql`REVOKE USAGE ON SCHEMA public FROM anon, authenticated`.execute(db);
  await sql`DROP SCHEMA IF EXISTS auth CASCADE`.execute(db);
  // The roles stay: they are cluster-wide, and other databases on the cluster may use them.
}
