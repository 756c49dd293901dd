import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../deps.js';

/** The public catalogue, quote and create (spec §4.8). */
export const publicOrderRoutes: FastifyPluginAsyncZod<AppDeps> = async () => {};
