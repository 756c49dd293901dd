import { z } from 'zod';
import {
  addBluetoothFilter, bluetoothGenerations, bluetoothRoles, modelNameSchema, namePrefixSchema, productModelIdSchema,
} from '../../shared/public-config/bluetooth-filters.js';
import type { Command } from './command.js';
import { readFlags, switchFlag } from './flags.js';

/** bluetooth-filter add (CONTRACTS.md "Public configuration"): one device-name prefix of a model. */
export const deviceCommands: Record<string, Command> = {
  'bluetooth-filter add': async (flags, ctx) => {
    const f = readFlags(flags, {
      'name-prefix': namePrefixSchema, 'product-model-id': productModelIdSchema, 'model-name': modelNameSchema,
      generation: z.enum(bluetoothGenerations).optional(), role: z.enum(bluetoothRoles).optional(),
      'requires-inventory-check': switchFlag.optional(),
    });
    return addBluetoothFilter(ctx.db(), {
      namePrefix: f['name-prefix'], productModelId: f['product-model-id'], modelName: f['model-name'],
      generation: f.generation, role: f.role, requiresInventoryCheck: f['requires-inventory-check'],
    });
  },
};
