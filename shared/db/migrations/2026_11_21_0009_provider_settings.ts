import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// Per-team LLM provider settings: the base URL and API key an `llm` block's `provider` names.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('team_llm_providers')
    .addColumn('team_id', 'uuid', (c) => c.notNull().references('teams.id'))
    // The `provider` value blocks refer to; `default` serves blocks without one.
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('base_url', 'text', (c) => c.notNull())
    // `v1:<keyId>:<iv>:<tag>:<ciphertext>` (shared/secrets/key-ring.ts); the plaintext is never stored.
    .addColumn('api_key_sealed', 'text', (c) => c.notNull())
    // Last 4 characters of the key, so people can tell keys apart; null for keys too short to show any of.
    .addColumn('api_key_preview', 'text')
    .addColumn('created_by', 'uuid', (c) => c.references('users.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('team_llm_providers_pkey', ['team_id', 'name'])
    .addCheckConstraint('team_llm_providers_name', sql`name ~ '^[a-z0-9][a-z0-9_-]{0,39}$'`)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('team_llm_providers').execute();
}
