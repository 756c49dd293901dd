import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../deps.js';

/** POST /public/hardware-sales/orders/lookup (spec §4.8): an order by number and phone, masked (§2.13). */
export const publicLookupRoutes: FastifyPluginAsyncZod<AppDeps> = async () => {};
