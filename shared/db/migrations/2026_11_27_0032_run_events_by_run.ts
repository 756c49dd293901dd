import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// Every read of a run's log asks for its events after an id, in id order (run-events-repository.ts:
// a resumed stream's Last-Event-ID, the event hub's poll of followed runs). The only index that led
// with run_id was (run_id, event_key), so PostgreSQL fetched all of the run's events and sorted them,
// or walked the primary key past every other run's events: measured on 1M events of 50,000 runs, a
// 5,000-event run resumed after its 1,000th took 9–62 ms, 0.7–0.9 ms with this index, and a live
// follower's read after the last event no longer rereads the whole run (docs/decisions.md, issue 45).

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX run_events_run_id_id_idx ON run_events (run_id, id)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS run_events_run_id_id_idx`.execute(db);
}
