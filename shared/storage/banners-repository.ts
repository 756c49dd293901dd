import { sql, type Selectable } from 'kysely';
import type { Database } from '../db/client.js';
import type { StorageObjectsTable } from '../db/types.js';

// Kysely queries only: who may write an object and what the storage API answers live in banners.ts.

export type StorageObjectRow = Selectable<StorageObjectsTable>;

export const findStorageObject = (db: Database, bucketId: string, name: string) =>
  db.selectFrom('storage_objects').selectAll().where('bucket_id', '=', bucketId).where('name', '=', name).executeTakeFirst();

/** The object under the name, locked until the transaction ends (a concurrent writer of the same name waits). */
export const lockStorageObject = (db: Database, bucketId: string, name: string) =>
  db.selectFrom('storage_objects').selectAll().where('bucket_id', '=', bucketId).where('name', '=', name).forUpdate().executeTakeFirst();

export const lockStorageObjects = (db: Database, bucketId: string, names: readonly string[]) =>
  db.selectFrom('storage_objects').selectAll().where('bucket_id', '=', bucketId).where('name', 'in', names)
    .orderBy('name').forUpdate().execute();

export const insertStorageObject = (db: Database, row: Omit<StorageObjectRow, 'created_at' | 'updated_at'>) =>
  db.insertInto('storage_objects').values(row).returningAll().executeTakeFirstOrThrow();

/** New bytes under the same object (id, owner and creation stay). */
export const replaceStorageObjectBytes = (
  db: Database, id: string, bytes: Pick<StorageObjectRow, 'storage_key' | 'content_type' | 'cache_control' | 'size' | 'sha256'>,
) => db.updateTable('storage_objects').set({ ...bytes, updated_at: sql<Date>`now()` as never }).where('id', '=', id)
  .returningAll().executeTakeFirstOrThrow();

export const deleteStorageObjects = (db: Database, ids: readonly string[]) =>
  db.deleteFrom('storage_objects').where('id', 'in', ids).execute();
