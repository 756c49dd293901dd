import { z } from 'zod';
import {
  addBluetoothFilter, bluetoothGenerations, bluetoothRoles, modelNameSchema, namePrefixSchema, productModelIdSchema,
} from '../../shared/public-config/bluetooth-filters.js';
import { defineCommand, flag, type Command } from './command.js';
import { switchFlag } from './flags.js';

/** bluetooth-filter add (CONTRACTS.md "Public configuration"): one device-name prefix of a model. */
export const deviceCommands: Record<string, Command> = {
  'bluetooth-filter add': defineCommand({
    summary: "Add a device-name prefix of a product model to the public Bluetooth filter list",
    prints: '{ id }',
    flags: {
      'name-prefix': flag(namePrefixSchema, 'the Bluetooth device-name prefix', 'PREFIX'),
      'product-model-id': flag(productModelIdSchema, 'the product model id', 'ID'),
      'model-name': flag(modelNameSchema, 'the model name shown to users', 'N'),
      generation: flag(z.enum(bluetoothGenerations).optional(), 'hardware generation'),
      role: flag(z.enum(bluetoothRoles).optional(), 'what the app may do with it'),
      'requires-inventory-check': flag(switchFlag.optional(), 'check inventory before pairing (bare flag means true)', 'true|false'),
    },
    run: (f, ctx) => addBluetoothFilter(ctx.db(), {
      namePrefix: f['name-prefix'], productModelId: f['product-model-id'], modelName: f['model-name'],
      generation: f.generation, role: f.role, requiresInventoryCheck: f['requires-inventory-check'],
    }),
  }),
};
