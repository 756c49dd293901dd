import { sql } from 'kysely';
import type { Database } from '../db/client.js';

// Kysely queries only, for a user's personal default project: the rules live in default-project.ts.

/** Serializes the callers of one user (a transaction-scoped advisory lock). */
export async function lockDefaultProjectOf(trx: Database, userId: string): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(hashtext(${`default-project:${userId}`}))`.execute(trx);
}

/** The live project of `systemPurpose` the user created, with its team. */
export async function findSystemProjectOf(trx: Database, userId: string, systemPurpose: string) {
  return trx.selectFrom('projects as p')
    .innerJoin('teams as t', 't.id', 'p.team_id')
    .select(['p.id', 'p.team_id', 'p.slug', 'p.name', 'p.deletion_locked', 't.slug as team_slug', 't.name as team_name', 't.owner_id', 't.deleted_at as team_deleted_at'])
    .where('p.created_by', '=', userId).where('p.system_purpose', '=', systemPurpose).where('p.deleted_at', 'is', null)
    .executeTakeFirst();
}

/** The user's oldest live team they own. */
export async function findFirstOwnedTeam(trx: Database, userId: string): Promise<{ id: string; slug: string; name: string } | undefined> {
  return trx.selectFrom('teams').select(['id', 'slug', 'name'])
    .where('owner_id', '=', userId).where('deleted_at', 'is', null).orderBy('created_at').executeTakeFirst();
}
