import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// Uploaded files (storage): metadata here, bytes in the file store under `storage_key`.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('files')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('project_id', 'uuid', (c) => c.notNull().references('projects.id'))
    .addColumn('team_id', 'uuid', (c) => c.notNull().references('teams.id'))
    // The acting user (an API key's creator) and, for API key uploads, the key itself.
    .addColumn('uploaded_by', 'uuid', (c) => c.references('users.id'))
    .addColumn('api_key_id', 'uuid', (c) => c.references('api_keys.id'))
    .addColumn('size', 'bigint', (c) => c.notNull().check(sql`size >= 0`))
    .addColumn('content_type', 'text', (c) => c.notNull())
    // As the client named it; shown to people only, never used to build a path.
    .addColumn('original_name', 'text')
    .addColumn('sha256', 'text', (c) => c.notNull().check(sql`sha256 ~ '^[0-9a-f]{64}$'`))
    .addColumn('storage_key', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('deleted_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('files_project_idx').on('files').columns(['project_id', 'created_at']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('files').ifExists().execute();
}
