import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// Connectors (docs/connectors.md, spec §2.4, §2.5, §3.1):
// - `connectors`: the catalog as data (`imap_mail` is seeded); `connector set` approves, rejects and
//   trips the circuit breaker.
// - `connector_connections`: one user's account at a connector; credentials sealed per field with
//   the key ring (the row id and field name as associated data), a mask for display.
// - `connector_bindings`: a document's trigger on a connection.

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

  // A document's trigger on a connection (`connector-binding create`): publishing the document
  // needs the connection `active`; polling (one workflow per binding) follows it.
  await db.schema.createTable('connector_bindings')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('document_id', 'uuid', (c) => c.notNull().references('documents.id'))
    .addColumn('connection_id', 'uuid', (c) => c.notNull().references('connector_connections.id'))
    .addColumn('trigger', 'text', (c) => c.notNull())
    // Null: the site setting `connectors.poll_seconds`.
    .addColumn('poll_seconds', 'integer', (c) => c.check(sql`poll_seconds IS NULL OR poll_seconds >= 1`))
    .addColumn('enabled', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('created_by', 'uuid', (c) => c.notNull().references('users.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('connector_bindings_document_connection_trigger_key', ['document_id', 'connection_id', 'trigger'])
    .execute();
  await db.schema.createIndex('connector_bindings_connection_idx').on('connector_bindings').column('connection_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('connector_bindings').ifExists().execute();
  await db.schema.dropTable('connector_connections').ifExists().execute();
  await db.schema.dropTable('connectors').ifExists().execute();
}
