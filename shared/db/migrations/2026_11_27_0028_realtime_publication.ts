import type { Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// Reserved: the publication (and replica identities) realtime's change capture reads (issue 37).

export async function up(_db: Kysely<unknown>): Promise<void> {}

export async function down(_db: Kysely<unknown>): Promise<void> {}
