import { sql, type Insertable, type Selectable } from 'kysely';
import type { Database } from '../db/client.js';
import type { BluetoothFiltersTable, BoardAssetsTable, FirmwareFilesTable, SiteSettingsTable } from '../db/types.js';

// Kysely queries only: validation, conflicts and the public shapes live in the modules beside this file.

// --- bluetooth filters ---

export async function insertBluetoothFilter(db: Database, values: Insertable<BluetoothFiltersTable>): Promise<{ id: string }> {
  return db.insertInto('bluetooth_filters').values(values).returning('id').executeTakeFirstOrThrow();
}

export async function findBluetoothFilterOwner(db: Database, namePrefix: string): Promise<{ product_model_id: string } | undefined> {
  return db.selectFrom('bluetooth_filters').select('product_model_id')
    .where('name_prefix', '=', namePrefix).executeTakeFirst();
}

/** Longest prefix first, then alphabetical. */
export async function listBluetoothFilterRows(db: Database): Promise<Pick<Selectable<BluetoothFiltersTable>,
  'name_prefix' | 'product_model_id' | 'model_name' | 'requires_inventory_check' | 'generation' | 'role'>[]> {
  return db.selectFrom('bluetooth_filters')
    .select(['name_prefix', 'product_model_id', 'model_name', 'requires_inventory_check', 'generation', 'role'])
    .orderBy(sql`char_length(name_prefix)`, 'desc').orderBy('name_prefix')
    .execute();
}

// --- firmware ---

export async function findFirmwareFile(db: Database, key: { model: string; module: FirmwareFilesTable['module']; fileName: string }): Promise<Pick<Selectable<FirmwareFilesTable>, 'model' | 'module' | 'file_name' | 'sha256' | 'size'> | undefined> {
  return db.selectFrom('firmware_files').select(['model', 'module', 'file_name', 'sha256', 'size'])
    .where('model', '=', key.model).where('module', '=', key.module).where('file_name', '=', key.fileName)
    .executeTakeFirst();
}

/** Registering the same (model, module, file name) again points it at the new bytes. */
export async function upsertFirmwareFile(db: Database, values: Pick<Insertable<FirmwareFilesTable>, 'model' | 'module' | 'file_name' | 'sha256' | 'size'>): Promise<void> {
  const { sha256, size } = values;
  await db.insertInto('firmware_files')
    .values(values)
    .onConflict((oc) => oc.columns(['model', 'module', 'file_name']).doUpdateSet({ sha256, size, updated_at: sql`now()` }))
    .execute();
}

// --- board assets ---

export async function findBoardAssetSize(db: Database, key: Pick<Selectable<BoardAssetsTable>, 'kind' | 'target' | 'sha256' | 'file_name'>): Promise<{ size: number } | undefined> {
  return db.selectFrom('board_assets').select('size')
    .where('kind', '=', key.kind).where('target', '=', key.target)
    .where('sha256', '=', key.sha256).where('file_name', '=', key.file_name)
    .executeTakeFirst();
}

export async function findLargestBoardAssetSize(db: Database) {
  return db.selectFrom('board_assets').select((eb) => eb.fn.max('size').as('largest')).executeTakeFirst();
}

/** Idempotent for the same bytes and name. */
export async function insertBoardAssetIfAbsent(db: Database, values: Insertable<BoardAssetsTable>): Promise<void> {
  await db.insertInto('board_assets')
    .values(values)
    .onConflict((oc) => oc.columns(['kind', 'target', 'sha256', 'file_name']).doNothing())
    .execute();
}

// --- client configuration (site_settings rows) ---

export async function listSiteSettingsByKeys(db: Database, keys: string[]): Promise<Pick<Selectable<SiteSettingsTable>, 'key' | 'value' | 'updated_at'>[]> {
  return db.selectFrom('site_settings').select(['key', 'value', 'updated_at'])
    .where('key', 'in', keys).execute();
}

export async function findSiteSettingUpdatedAt(db: Database, key: string): Promise<{ updated_at: Date }> {
  return db.selectFrom('site_settings').select('updated_at').where('key', '=', key).executeTakeFirstOrThrow();
}
