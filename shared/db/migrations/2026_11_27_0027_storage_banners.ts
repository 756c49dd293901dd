import type { Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// Reserved: the data API's storage objects (bucket `banners`) and billing work of issue 36.

export async function up(_db: Kysely<unknown>): Promise<void> {}

export async function down(_db: Kysely<unknown>): Promise<void> {}
