import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// Releases: an alias (the public name of a released app) with published versions, each a router
// tree of endpoints (spec §4.1 `/api/released-app/r/:alias/:version/*`).

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('releases')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('project_id', 'uuid', (c) => c.notNull().references('projects.id'))
    .addColumn('team_id', 'uuid', (c) => c.notNull().references('teams.id'))
    // Unique across the service: the alias is the gateway URL. A deleted release keeps its alias
    // so an old URL never starts answering for someone else.
    .addColumn('alias', 'text', (c) => c.notNull().unique())
    // { requireAuth, rateLimit: { windowSeconds, maxRequests } }; read fail-closed (shared/releases/config.ts).
    .addColumn('config', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    // The key that pays for anonymous calls: a reference to a key row of the release's team, never a plaintext key.
    .addColumn('anonymous_api_key_id', 'uuid', (c) => c.references('api_keys.id'))
    .addColumn('created_by', 'uuid', (c) => c.references('users.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('deleted_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('releases_project_created_idx').on('releases').columns(['project_id', 'created_at']).execute();

  await db.schema
    .createTable('release_versions')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('release_id', 'uuid', (c) => c.notNull().references('releases.id'))
    .addColumn('version_major', 'integer', (c) => c.notNull())
    .addColumn('version_minor', 'integer', (c) => c.notNull())
    // The router tree: [{ method, path, deploymentId | documentId | neither, skipAuth, fieldMapping }].
    .addColumn('endpoints', 'jsonb', (c) => c.notNull())
    .addColumn('created_by', 'uuid', (c) => c.references('users.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('release_versions_release_version_key', ['release_id', 'version_major', 'version_minor'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('release_versions').execute();
  await db.schema.dropTable('releases').execute();
}
