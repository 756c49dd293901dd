import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// Issue 44: `run_approvals` on the data API and realtime (CONTRACTS.md "Long runs": a frontend's
// approval inbox, live). Members of the row's team read it, as they read `runs` (migration 0024's
// rule); nobody writes through the data API (deciding is the approval route's, which signals the
// run). The token hash, the fields schema, the data and the comment are not readable.

const COLUMNS = 'id, run_id, team_id, block_id, prompt, status, decided_by, decided_at, expires_at, created_at';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE run_approvals ENABLE ROW LEVEL SECURITY`.execute(db);
  await sql`CREATE POLICY "members read" ON run_approvals FOR SELECT TO authenticated
    USING (team_id IN (SELECT access_reader_team_ids((SELECT auth.uid()))))`.execute(db);
  await sql.raw(`GRANT SELECT (${COLUMNS}) ON run_approvals TO anon, authenticated`).execute(db);
  // The inbox of a team, newest first.
  await sql`CREATE INDEX run_approvals_team_status_idx ON run_approvals (team_id, status, created_at)`.execute(db);
  await sql`ALTER PUBLICATION realtime_changes ADD TABLE public.run_approvals`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER PUBLICATION realtime_changes DROP TABLE public.run_approvals`.execute(db);
  await sql`DROP INDEX IF EXISTS run_approvals_team_status_idx`.execute(db);
  await sql.raw(`REVOKE SELECT (${COLUMNS}) ON run_approvals FROM anon, authenticated`).execute(db);
  await sql`DROP POLICY IF EXISTS "members read" ON run_approvals`.execute(db);
  await sql`ALTER TABLE run_approvals DISABLE ROW LEVEL SECURITY`.execute(db);
}
