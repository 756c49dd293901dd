import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// Cross-team bindings: an owner team lets a grantee team run one of its released apps.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('cross_team_bindings')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('owner_team_id', 'uuid', (c) => c.notNull().references('teams.id'))
    .addColumn('grantee_team_id', 'uuid', (c) => c.notNull().references('teams.id'))
    // The document, not a deployment: the binding follows republishes and runs the newest version.
    .addColumn('document_id', 'uuid', (c) => c.notNull().references('documents.id'))
    // Optional pin: only this deployment may run through the binding.
    .addColumn('deployment_id', 'uuid', (c) => c.references('deployments.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_by', 'uuid', (c) => c.references('users.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('revoked_at', 'timestamptz')
    .addCheckConstraint('cross_team_bindings_other_team', sql`owner_team_id <> grantee_team_id`)
    .execute();
  // One live binding per document, grantee and pin; a revoked one frees the slot for a new grant.
  await sql`CREATE UNIQUE INDEX cross_team_bindings_live_key ON cross_team_bindings
    (document_id, grantee_team_id, coalesce(deployment_id, '00000000-0000-0000-0000-000000000000'::uuid))
    WHERE revoked_at IS NULL`.execute(db);
  await sql`CREATE INDEX cross_team_bindings_grantee_idx ON cross_team_bindings (grantee_team_id) WHERE revoked_at IS NULL`.execute(db);
  await db.schema.createIndex('cross_team_bindings_owner_created_idx').on('cross_team_bindings').columns(['owner_team_id', 'created_at']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('cross_team_bindings').execute();
}
