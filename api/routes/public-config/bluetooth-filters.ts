import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { bluetoothGenerations, bluetoothRoles, listBluetoothFilters } from '../../../shared/public-config/bluetooth-filters.js';
import type { AppDeps } from '../../deps.js';
import { publicError, useInternalErrorCode } from '../../plugins/public-envelope.js';
import { PUBLIC_LIST_CACHE_CONTROL } from './payment-catalog.js';

const filterItem = z.object({
  namePrefix: z.string(), productModelId: z.string(), modelName: z.string(), requiresInventoryCheck: z.boolean(),
  generation: z.enum(bluetoothGenerations).nullable().describe('null for a third-party model'),
  role: z.enum(bluetoothRoles).describe('upgrade_only: recognised for firmware upgrades, not for normal binding'),
});

/** The device-name prefixes the apps scan for (spec §4.10, §2.19). */
export const bluetoothFilterRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  useInternalErrorCode(app);

  app.get('/devices/bluetooth-filters', {
    schema: {
      tags: ['public-config'],
      summary: 'Bluetooth filters: one per device-name prefix, longest prefix first',
      description: 'One model may have several prefixes: clients de-duplicate by productModelId.',
      response: { 200: z.object({ success: z.literal(true), filters: z.array(filterItem) }), 500: publicError, 503: publicError },
    },
  }, async (_request, reply) => {
    const filters = await listBluetoothFilters(deps.db);
    reply.header('cache-control', PUBLIC_LIST_CACHE_CONTROL);
    return { success: true as const, filters };
  });
};
