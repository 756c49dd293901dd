import type { Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// Reserved: agent management over HTTP (issue 38); empty if no column is needed.

export async function up(_db: Kysely<unknown>): Promise<void> {}

export async function down(_db: Kysely<unknown>): Promise<void> {}
