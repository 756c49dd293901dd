import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// Connectors (docs/connectors.md, spec §2.4, §2.5, §3.1):
// - `connectors`: the catalog as data (`imap_mail` is seeded); `connector set` approves, rejects and
//   trips the circuit breaker.
// - `connector_connections`: one user's account at a connector; credentials sealed per field with
//   the key ring (the row id and field name as associated data), a mask for display.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createTable('connectors')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('service', 'text', (c) => c.notNull().unique())
    .addColumn('display_name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('categories', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('auth_type', 'text', (c) => c.notNull())
    .addColumn('credential_fields', 'jsonb', (c) => c.notNull())
    .addColumn('supported_triggers', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('pending').check(sql`status IN ('approved', 'pending', 'rejected')`))
    .addColumn('circuit_broken', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('credit_multiplier', 'numeric', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await sql`
    INSERT INTO connectors (id, service, display_name, description, categories, auth_type, credential_fields, supported_triggers, status)
    VALUES (gen_random_uuid(), 'imap_mail', 'Mail (IMAP)', 'New mail in an IMAP inbox starts a run', '["mail"]'::jsonb, 'custom_credential',
      ${JSON.stringify([
        { key: 'host', label: 'IMAP server', type: 'text', secret: false, required: true },
        { key: 'port', label: 'Port', type: 'text', secret: false, required: true },
        { key: 'tls', label: 'TLS ("true" or "false")', type: 'text', secret: false, required: true },
        { key: 'username', label: 'User name', type: 'text', secret: false, required: true },
        { key: 'password', label: 'Password', type: 'password', secret: true, required: true },
      ])}::jsonb, '["poll_new_email"]'::jsonb, 'approved')
  `.execute(db);

  await db.schema.createTable('connector_connections')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id'))
    .addColumn('service', 'text', (c) => c.notNull().references('connectors.service'))
    .addColumn('account_label', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('pending').check(sql`status IN ('pending', 'active', 'invalid', 'revoked')`))
    // { field: sealed value }: each sealed with the row id and the field name as associated data.
    .addColumn('credentials_sealed', 'jsonb', (c) => c.notNull())
    // { field: masked value } for display; never the value itself.
    .addColumn('credential_mask', 'jsonb', (c) => c.notNull())
    .addColumn('last_verified_at', 'timestamptz')
    .addColumn('last_error_code', 'text')
    .addColumn('revoked_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('connector_connections_user_idx').on('connector_connections').columns(['user_id', 'created_at']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('connector_connections').ifExists().execute();
  await db.schema.dropTable('connectors').ifExists().execute();
}
