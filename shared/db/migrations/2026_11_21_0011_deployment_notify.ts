import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// Any write to `deployments` (publish, delete, a fix by hand in psql) tells running API processes
// to drop their cached copy of that document's deployments (shared/app-runs/deployment-cache.ts).
// A TRUNCATE names no document: its empty payload clears every cached document.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE FUNCTION notify_deployments_changed() RETURNS trigger AS $$
    BEGIN
      IF TG_OP = 'TRUNCATE' THEN
        PERFORM pg_notify('deployments_changed', '');
      ELSE
        PERFORM pg_notify('deployments_changed', COALESCE(NEW.document_id, OLD.document_id)::text);
      END IF;
      RETURN NULL;
    END;
    $$ LANGUAGE plpgsql`.execute(db);
  await sql`
    CREATE TRIGGER deployments_changed AFTER INSERT OR UPDATE OR DELETE ON deployments
    FOR EACH ROW EXECUTE FUNCTION notify_deployments_changed()`.execute(db);
  await sql`
    CREATE TRIGGER deployments_truncated AFTER TRUNCATE ON deployments
    FOR EACH STATEMENT EXECUTE FUNCTION notify_deployments_changed()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER IF EXISTS deployments_truncated ON deployments`.execute(db);
  await sql`DROP TRIGGER IF EXISTS deployments_changed ON deployments`.execute(db);
  await sql`DROP FUNCTION IF EXISTS notify_deployments_changed()`.execute(db);
}
