import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// The access rule, written once in SQL so that the service (shared/access/) and the row-level
// security policies of the data API (CONTRACTS.md "Frontend data access") apply the same rule:
// - `access_team_role(team, user)`: the user's role in the team, null when they are not a member
//   or the team is deleted.
// - `access_team_level(team, user, key_team)`: 'admin' (owner or admin), 'member', or 'none'. With
//   `key_team` set the caller is an API key of that team: a key of another team has no access, and
//   a key of the team reads and edits even when its creator has since left it.
// - `access_project_team(project)`: the team of a project that is not deleted (nor its team).
// - `access_document_team(document)`: the team of a document that is not deleted (nor its project,
//   nor its team).
// - `access_member_team_ids(user)`: the teams (not deleted) the user belongs to.
// They are `stable security definer` with a fixed search_path: a policy calls them without the
// caller needing rights on team_members, and PostgreSQL evaluates them once per statement when
// they are called with constants (Supabase's "RLS performance" advice).
// Also: a new team gets its (empty) credit balance from a trigger, so whoever creates a team
// (identity's services, the phone login's default project) needs to know nothing of billing.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE FUNCTION access_team_role(p_team uuid, p_user uuid) RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
      SELECT m.role FROM team_members m JOIN teams t ON t.id = m.team_id
      WHERE m.team_id = p_team AND m.user_id = p_user AND t.deleted_at IS NULL
    $$`.execute(db);
  await sql`
    CREATE FUNCTION access_team_level(p_team uuid, p_user uuid, p_key_team uuid DEFAULT NULL) RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
      SELECT CASE
        WHEN p_key_team IS NOT NULL AND p_key_team <> p_team THEN 'none'
        WHEN NOT EXISTS (SELECT 1 FROM teams WHERE id = p_team AND deleted_at IS NULL) THEN 'none'
        WHEN r.role IN ('owner', 'admin') THEN 'admin'
        WHEN r.role = 'member' OR p_key_team IS NOT NULL THEN 'member'
        ELSE 'none'
      END
      FROM (SELECT access_team_role(p_team, p_user) AS role) r
    $$`.execute(db);
  await sql`
    CREATE FUNCTION access_project_team(p_project uuid) RETURNS uuid
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
      SELECT p.team_id FROM projects p JOIN teams t ON t.id = p.team_id
      WHERE p.id = p_project AND p.deleted_at IS NULL AND t.deleted_at IS NULL
    $$`.execute(db);
  await sql`
    CREATE FUNCTION access_document_team(p_document uuid) RETURNS uuid
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
      SELECT p.team_id FROM documents d JOIN projects p ON p.id = d.project_id JOIN teams t ON t.id = p.team_id
      WHERE d.id = p_document AND d.deleted_at IS NULL AND p.deleted_at IS NULL AND t.deleted_at IS NULL
    $$`.execute(db);
  await sql`
    CREATE FUNCTION access_member_team_ids(p_user uuid) RETURNS SETOF uuid
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
      SELECT m.team_id FROM team_members m JOIN teams t ON t.id = m.team_id
      WHERE m.user_id = p_user AND t.deleted_at IS NULL
    $$`.execute(db);

  await sql`
    CREATE FUNCTION create_team_credit_balance() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO credit_balances (team_id) VALUES (NEW.id) ON CONFLICT (team_id) DO NOTHING;
      RETURN NEW;
    END $$`.execute(db);
  await sql`
    CREATE TRIGGER teams_credit_balance AFTER INSERT ON teams
    FOR EACH ROW EXECUTE FUNCTION create_team_credit_balance()`.execute(db);
  // Teams made before this migration by hand (not through the services) get theirs too.
  await sql`INSERT INTO credit_balances (team_id) SELECT id FROM teams ON CONFLICT (team_id) DO NOTHING`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER IF EXISTS teams_credit_balance ON teams`.execute(db);
  await sql`DROP FUNCTION IF EXISTS create_team_credit_balance()`.execute(db);
  await sql`DROP FUNCTION IF EXISTS access_member_team_ids(uuid)`.execute(db);
  await sql`DROP FUNCTION IF EXISTS access_document_team(uuid)`.execute(db);
  await sql`DROP FUNCTION IF EXISTS access_project_team(uuid)`.execute(db);
  await sql`DROP FUNCTION IF EXISTS access_team_level(uuid, uuid, uuid)`.execute(db);
  await sql`DROP FUNCTION IF EXISTS access_team_role(uuid, uuid)`.execute(db);
}
