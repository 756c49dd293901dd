import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// Issue 44, runs that wait (docs/long-runs.md):
// - runs.status may read `waiting` while the run's workflow sleeps on a `wait` block's timer or an
//   `approval` block's decision; it goes back to `running` when the wait ends.
// - runs_waiting_idx: counting a team's waiting runs (`runs.max_waiting_per_team`) reads only them.
// - run_approvals: one row per approval block a run reached. The decision is made here first (one
//   conditional UPDATE of a `pending` row: exactly one decision wins), then signalled to the
//   workflow. The approval link's token is stored only as its SHA-256.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE runs DROP CONSTRAINT IF EXISTS runs_status_check`.execute(db);
  await sql`ALTER TABLE runs ADD CONSTRAINT runs_status_check
    CHECK (status IN ('running', 'waiting', 'completed', 'failed', 'cancelled', 'timed_out'))`.execute(db);
  await sql`CREATE INDEX runs_waiting_idx ON runs (team_id) WHERE status = 'waiting'`.execute(db);
  await sql`
    CREATE TABLE run_approvals (
      id uuid PRIMARY KEY,
      run_id uuid NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
      team_id uuid NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
      block_id text NOT NULL,
      prompt text NOT NULL,
      fields jsonb,
      status text NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'approved', 'rejected', 'timed_out', 'cancelled')),
      token_hash text NOT NULL UNIQUE,
      data jsonb,
      comment text,
      decided_by text,
      decided_at timestamptz,
      expires_at timestamptz NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (run_id, block_id)
    )`.execute(db);
  await sql`CREATE INDEX run_approvals_team_idx ON run_approvals (team_id, created_at)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE IF EXISTS run_approvals`.execute(db);
  await sql`DROP INDEX IF EXISTS runs_waiting_idx`.execute(db);
  await sql`UPDATE runs SET status = 'running' WHERE status = 'waiting'`.execute(db);
  await sql`ALTER TABLE runs DROP CONSTRAINT IF EXISTS runs_status_check`.execute(db);
  await sql`ALTER TABLE runs ADD CONSTRAINT runs_status_check
    CHECK (status IN ('running', 'completed', 'failed', 'cancelled', 'timed_out'))`.execute(db);
}
