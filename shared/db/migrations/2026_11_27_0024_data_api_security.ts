import type { Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// Reserved: roles, auth.uid(), privileges and row-level security policies of the data API (issue 36).

export async function up(_db: Kysely<unknown>): Promise<void> {}

export async function down(_db: Kysely<unknown>): Promise<void> {}
