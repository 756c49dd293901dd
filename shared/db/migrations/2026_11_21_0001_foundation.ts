import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('users')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('phone', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await sql`CREATE UNIQUE INDEX users_email_key ON users (lower(email))`.execute(db);
  await sql`CREATE UNIQUE INDEX users_phone_key ON users (phone) WHERE phone IS NOT NULL`.execute(db);

  await db.schema
    .createTable('teams')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('slug', 'text', (c) => c.notNull().unique())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('owner_id', 'uuid', (c) => c.notNull().references('users.id'))
    .addColumn('plan_code', 'text', (c) =>
      c.notNull().defaultTo('free').check(sql`plan_code IN ('free', 'pro', 'business', 'infrastructure')`),
    )
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('deleted_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('teams_owner_idx').on('teams').column('owner_id').execute();

  await db.schema
    .createTable('team_members')
    .addColumn('team_id', 'uuid', (c) => c.notNull().references('teams.id').onDelete('cascade'))
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('role', 'text', (c) => c.notNull().check(sql`role IN ('owner', 'admin', 'member')`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('team_members_pkey', ['team_id', 'user_id'])
    .execute();
  await db.schema.createIndex('team_members_user_idx').on('team_members').column('user_id').execute();

  await db.schema
    .createTable('projects')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('team_id', 'uuid', (c) => c.notNull().references('teams.id'))
    .addColumn('slug', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    // Set for projects the system creates and owns (e.g. `personal_default`); null for user projects.
    .addColumn('system_purpose', 'text')
    .addColumn('visibility', 'text', (c) => c.notNull().defaultTo('private').check(sql`visibility IN ('private', 'public')`))
    .addColumn('deletion_locked', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('created_by', 'uuid', (c) => c.references('users.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('deleted_at', 'timestamptz')
    .addUniqueConstraint('projects_team_slug_key', ['team_id', 'slug'])
    .execute();

  await db.schema
    .createTable('site_settings')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('value', 'jsonb', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  // Any write, from the CLI or by hand in psql, tells running processes to drop their cached copy.
  await sql`
    CREATE FUNCTION notify_site_settings_changed() RETURNS trigger AS $$
    BEGIN
      PERFORM pg_notify('site_settings_changed', COALESCE(NEW.key, OLD.key));
      RETURN NULL;
    END;
    $$ LANGUAGE plpgsql`.execute(db);
  await sql`
    CREATE TRIGGER site_settings_changed AFTER INSERT OR UPDATE OR DELETE ON site_settings
    FOR EACH ROW EXECUTE FUNCTION notify_site_settings_changed()`.execute(db);

  await db.schema
    .createTable('credit_balances')
    .addColumn('team_id', 'uuid', (c) => c.primaryKey().references('teams.id'))
    .addColumn('balance_milli', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('credit_transactions')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('team_id', 'uuid', (c) => c.notNull().references('teams.id'))
    .addColumn('amount_milli', 'bigint', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    // Idempotency key of the operation that caused the movement (run id, order id, operator grant …).
    .addColumn('reference', 'text')
    .addColumn('created_by', 'uuid', (c) => c.references('users.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await sql`CREATE UNIQUE INDEX credit_transactions_reference_key ON credit_transactions (team_id, reference) WHERE reference IS NOT NULL`.execute(db);
  await db.schema.createIndex('credit_transactions_team_idx').on('credit_transactions').columns(['team_id', 'created_at']).execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('team_id', 'uuid', (c) => c.notNull().references('teams.id'))
    .addColumn('created_by', 'uuid', (c) => c.notNull().references('users.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    // sha256 of the plaintext; the plaintext is shown once and never stored.
    .addColumn('key_hash', 'text', (c) => c.notNull().unique())
    .addColumn('limit_credits', 'bigint')
    .addColumn('usage_credits', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('expires_at', 'timestamptz')
    .addColumn('last_used_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('deleted_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('api_keys_team_idx').on('api_keys').column('team_id').execute();

  await db.schema
    .createTable('platform_probes')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('workflow_id', 'text', (c) => c.notNull())
    .addColumn('note', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['platform_probes', 'api_keys', 'credit_transactions', 'credit_balances', 'site_settings', 'projects', 'team_members', 'teams', 'users']) {
    await db.schema.dropTable(table).ifExists().execute();
  }
  await sql`DROP FUNCTION IF EXISTS notify_site_settings_changed()`.execute(db);
}
