import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// Credentials of every kind (CONTRACTS.md token formats): only sha256 hashes of tokens are stored.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('users')
    .addColumn('metadata', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    // Agents act through virtual users of their own; they never sign in.
    .addColumn('is_agent', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute();

  // The personal default project (spec §4.4): one live one per user, never public, never deleted.
  await sql`CREATE UNIQUE INDEX projects_personal_default_key ON projects (created_by)
    WHERE system_purpose = 'personal_default' AND deleted_at IS NULL`.execute(db);
  await sql`ALTER TABLE projects ADD CONSTRAINT projects_personal_default_private
    CHECK (system_purpose IS DISTINCT FROM 'personal_default' OR (visibility = 'private' AND deleted_at IS NULL AND deletion_locked))`.execute(db);

  await db.schema
    .createTable('agents')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('team_id', 'uuid', (c) => c.references('teams.id'))
    .addColumn('user_id', 'uuid', (c) => c.notNull().unique().references('users.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('avatar_url', 'text')
    // Permission group: grants such as `GET /my` or `POST /api/released-app/*`.
    .addColumn('permissions', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'::text[]`))
    .addColumn('created_by', 'uuid', (c) => c.references('users.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('deleted_at', 'timestamptz')
    .execute();

  await db.schema
    .createTable('agent_bindings')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('agent_id', 'uuid', (c) => c.notNull().references('agents.id'))
    .addColumn('agent_user_id', 'uuid', (c) => c.notNull().references('users.id'))
    .addColumn('owner_user_id', 'uuid', (c) => c.notNull().references('users.id'))
    .addColumn('team_id', 'uuid', (c) => c.references('teams.id'))
    // Null once revoked: the binding stays, the token stops working at once.
    .addColumn('token_hash', 'text', (c) => c.unique())
    .addColumn('can_send', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('can_receive', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('revoked_at', 'timestamptz')
    .addColumn('deleted_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('agent_bindings_owner_idx').on('agent_bindings').column('owner_user_id').execute();
  await db.schema.createIndex('agent_bindings_agent_user_idx').on('agent_bindings').column('agent_user_id').execute();

  await db.schema
    .createTable('oauth_apps')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('owner_id', 'uuid', (c) => c.notNull().references('users.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('logo_url', 'text')
    // `private`: only its author may authorize it, until an administrator approves it.
    .addColumn('review_status', 'text', (c) => c.notNull().defaultTo('private').check(sql`review_status IN ('private', 'approved')`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('disabled_at', 'timestamptz')
    .addColumn('deleted_at', 'timestamptz')
    .execute();

  await db.schema
    .createTable('oauth_clients')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('app_id', 'uuid', (c) => c.notNull().references('oauth_apps.id'))
    .addColumn('client_id', 'text', (c) => c.notNull().unique())
    .addColumn('platform', 'text', (c) => c.notNull().check(sql`platform IN ('web', 'desktop', 'mobile')`))
    .addColumn('redirect_uris', sql`text[]`, (c) => c.notNull())
    .addColumn('allowed_scopes', sql`text[]`, (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  // A grant is one user's consent to one client, carried from the code through every rotated token.
  await db.schema
    .createTable('oauth_grants')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('client_pk', 'uuid', (c) => c.notNull().references('oauth_clients.id'))
    .addColumn('app_id', 'uuid', (c) => c.notNull().references('oauth_apps.id'))
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id'))
    .addColumn('scopes', sql`text[]`, (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('revoked_at', 'timestamptz')
    .execute();

  await db.schema
    .createTable('oauth_codes')
    .addColumn('code_hash', 'text', (c) => c.primaryKey())
    .addColumn('grant_id', 'uuid', (c) => c.notNull().references('oauth_grants.id'))
    .addColumn('redirect_uri', 'text', (c) => c.notNull())
    .addColumn('code_challenge', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('used_at', 'timestamptz')
    .execute();

  await db.schema
    .createTable('oauth_tokens')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('grant_id', 'uuid', (c) => c.notNull().references('oauth_grants.id'))
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind IN ('access', 'refresh')`))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('client_pk', 'uuid', (c) => c.notNull().references('oauth_clients.id'))
    .addColumn('app_id', 'uuid', (c) => c.notNull().references('oauth_apps.id'))
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id'))
    .addColumn('scopes', sql`text[]`, (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    // A refresh token is used once (rotation); a second use is a replay.
    .addColumn('used_at', 'timestamptz')
    .addColumn('revoked_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('oauth_tokens_user_app_idx').on('oauth_tokens').columns(['user_id', 'app_id']).execute();
  await db.schema.createIndex('oauth_tokens_grant_idx').on('oauth_tokens').column('grant_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['oauth_tokens', 'oauth_codes', 'oauth_grants', 'oauth_clients', 'oauth_apps', 'agent_bindings', 'agents']) {
    await db.schema.dropTable(table).ifExists().execute();
  }
  await sql`ALTER TABLE projects DROP CONSTRAINT IF EXISTS projects_personal_default_private`.execute(db);
  await sql`DROP INDEX IF EXISTS projects_personal_default_key`.execute(db);
  await db.schema.alterTable('users').dropColumn('metadata').dropColumn('is_agent').execute();
}
