import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// Issue 44, background runs and callbacks (docs/long-runs.md "Background runs and callbacks"):
// - team_outbound_webhook_secrets: the secret a team's run callbacks are signed with (Standard
//   Webhooks, `whsec_…`), sealed with SECRETS_KEY like other secrets at rest; after a rotation the
//   previous one keeps signing until `previous_expires_at` (24 h).
// - run_callback_deliveries: one row per callback event of a run (its delivery log), written by the
//   delivery activity on every attempt. Not on the data API: read through GET /api/runs/:runId/deliveries.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE team_outbound_webhook_secrets (
      team_id uuid PRIMARY KEY REFERENCES teams(id) ON DELETE CASCADE,
      secret_sealed text NOT NULL,
      previous_secret_sealed text,
      previous_expires_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      rotated_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db);
  await sql`
    CREATE TABLE run_callback_deliveries (
      run_id uuid NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
      event_id bigint NOT NULL,
      type text NOT NULL,
      url text NOT NULL,
      attempts integer NOT NULL DEFAULT 0,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
      last_status_code integer,
      last_error text,
      delivered_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (run_id, event_id)
    )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE IF EXISTS run_callback_deliveries`.execute(db);
  await sql`DROP TABLE IF EXISTS team_outbound_webhook_secrets`.execute(db);
}
