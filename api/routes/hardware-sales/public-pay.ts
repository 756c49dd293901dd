import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../deps.js';

/** POST /public/hardware-sales/orders/:orderNo/pay (spec §4.8): the channel × scene matrix. */
export const publicPayRoutes: FastifyPluginAsyncZod<AppDeps> = async () => {};
