import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// One client of an OAuth app can be removed (issue 45, docs/oauth.md "App lifecycle"): the row stays,
// marked `deleted_at`, so the grants and tokens it issued keep their history (they are revoked with it).

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE oauth_clients ADD COLUMN deleted_at timestamptz`.execute(db);
  // Removing a client revokes its live grants and tokens: looked up by client.
  await sql`CREATE INDEX oauth_tokens_client_live_idx ON oauth_tokens (client_pk) WHERE revoked_at IS NULL`.execute(db);
  await sql`CREATE INDEX oauth_grants_client_live_idx ON oauth_grants (client_pk) WHERE revoked_at IS NULL`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS oauth_grants_client_live_idx`.execute(db);
  await sql`DROP INDEX IF EXISTS oauth_tokens_client_live_idx`.execute(db);
  await sql`ALTER TABLE oauth_clients DROP COLUMN deleted_at`.execute(db);
}
