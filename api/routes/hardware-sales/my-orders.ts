import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../deps.js';

/** The logged-in buyer's order endpoints (spec §4.9). */
export const myOrderRoutes: FastifyPluginAsyncZod<AppDeps> = async () => {};
