import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../deps.js';

/** The chan_a payment and refund callbacks of hardware orders (spec §4.7). */
export const hardwareCallbackRoutes: FastifyPluginAsyncZod<AppDeps> = async () => {};
