import { z } from 'zod';
import type { Database } from '../db/client.js';
import { isUniqueViolation } from '../db/errors.js';
import { AppError } from '../errors.js';
import { newId } from '../ids.js';
import { findBluetoothFilterOwner, insertBluetoothFilter, listBluetoothFilterRows } from './repository.js';

// The device-name prefixes the mobile clients scan for (spec §2.19, CONTRACTS.md "Public
// configuration"): one row per prefix, so one model may have several. Written by the CLI
// (`bluetooth-filter add`), read by `GET /public/devices/bluetooth-filters`.

export const bluetoothGenerations = ['gen1', 'gen2'] as const;
export const bluetoothRoles = ['full', 'upgrade_only'] as const;
export type BluetoothGeneration = (typeof bluetoothGenerations)[number];
export type BluetoothRole = (typeof bluetoothRoles)[number];

/** A BLE advertised name is at most 248 bytes; a prefix is a short leading part of it. */
export const namePrefixSchema = z.string().trim().min(1).max(64);
export const productModelIdSchema = z.string().trim().min(1).max(100);
export const modelNameSchema = z.string().trim().min(1).max(200);

export interface BluetoothFilter {
  namePrefix: string;
  productModelId: string;
  modelName: string;
  requiresInventoryCheck: boolean;
  /** null: a third-party model. */
  generation: BluetoothGeneration | null;
  /** `upgrade_only`: recognised for firmware upgrades, never offered for normal binding. */
  role: BluetoothRole;
}

export type NewBluetoothFilter = Pick<BluetoothFilter, 'namePrefix' | 'productModelId' | 'modelName'>
  & Partial<Pick<BluetoothFilter, 'requiresInventoryCheck' | 'generation' | 'role'>>;

export async function addBluetoothFilter(db: Database, input: NewBluetoothFilter): Promise<{ id: string }> {
  try {
    return await insertBluetoothFilter(db, {
      id: newId(), name_prefix: input.namePrefix, product_model_id: input.productModelId, model_name: input.modelName,
      generation: input.generation ?? null, role: input.role ?? 'full', requires_inventory_check: input.requiresInventoryCheck ?? false,
    });
  } catch (error) {
    if (!isUniqueViolation(error)) throw error;
    // A prefix maps to one model: a second model under it would make a scan ambiguous.
    const owner = await findBluetoothFilterOwner(db, input.namePrefix);
    throw new AppError(409, 'bluetooth_filter_exists',
      `A filter for the name prefix '${input.namePrefix}' already exists${owner ? ` (model ${owner.product_model_id})` : ''}`);
  }
}

/**
 * Every filter, longest prefix first (then alphabetical): a client that takes the first prefix a
 * device name starts with meets the most specific one (`WF2` before `WF`).
 */
export async function listBluetoothFilters(db: Database): Promise<BluetoothFilter[]> {
  const rows = await listBluetoothFilterRows(db);
  return rows.map((row) => ({
    namePrefix: row.name_prefix, productModelId: row.product_model_id, modelName: row.model_name,
    requiresInventoryCheck: row.requires_inventory_check, generation: row.generation, role: row.role,
  }));
}
