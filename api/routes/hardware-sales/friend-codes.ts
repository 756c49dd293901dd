import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../deps.js';

/** Friend codes (spec §4.9 rules 2-3, §2.14, §2.15): derive, mine, a code's orders. */
export const friendCodeRoutes: FastifyPluginAsyncZod<AppDeps> = async () => {};
