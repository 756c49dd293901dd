import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// OAuth apps managed over HTTP (issue 38, docs/oauth.md "App lifecycle"):
// - `review_status` gains `rejected` (a platform administrator refused it; nobody may authorize it);
// - `reserved`: an official app only platform administrators may edit or delete;
// - who reviewed it, when, and the note they left for the developer.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE oauth_apps DROP CONSTRAINT oauth_apps_review_status_check`.execute(db);
  await sql`ALTER TABLE oauth_apps ADD CONSTRAINT oauth_apps_review_status_check
    CHECK (review_status IN ('private', 'approved', 'rejected'))`.execute(db);
  await sql`ALTER TABLE oauth_apps
    ADD COLUMN reserved boolean NOT NULL DEFAULT false,
    ADD COLUMN reviewed_at timestamptz,
    ADD COLUMN reviewed_by uuid REFERENCES users(id),
    ADD COLUMN review_note text`.execute(db);
  // The review queue and "my apps" lists skip deleted apps.
  await sql`CREATE INDEX oauth_apps_owner_live_idx ON oauth_apps (owner_id, created_at) WHERE deleted_at IS NULL`.execute(db);
  await sql`CREATE INDEX oauth_apps_review_queue_idx ON oauth_apps (review_status, created_at) WHERE deleted_at IS NULL`.execute(db);
  // Revoking every token and grant of an app at once (delete, offline, reject) looks them up by app.
  await sql`CREATE INDEX oauth_tokens_app_live_idx ON oauth_tokens (app_id) WHERE revoked_at IS NULL`.execute(db);
  await sql`CREATE INDEX oauth_grants_app_live_idx ON oauth_grants (app_id) WHERE revoked_at IS NULL`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const index of ['oauth_grants_app_live_idx', 'oauth_tokens_app_live_idx', 'oauth_apps_review_queue_idx', 'oauth_apps_owner_live_idx']) {
    await sql`DROP INDEX IF EXISTS ${sql.id(index)}`.execute(db);
  }
  await sql`ALTER TABLE oauth_apps DROP COLUMN review_note, DROP COLUMN reviewed_by, DROP COLUMN reviewed_at, DROP COLUMN reserved`.execute(db);
  await sql`UPDATE oauth_apps SET review_status = 'private' WHERE review_status = 'rejected'`.execute(db);
  await sql`ALTER TABLE oauth_apps DROP CONSTRAINT oauth_apps_review_status_check`.execute(db);
  await sql`ALTER TABLE oauth_apps ADD CONSTRAINT oauth_apps_review_status_check CHECK (review_status IN ('private', 'approved'))`.execute(db);
}
