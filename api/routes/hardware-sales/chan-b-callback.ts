import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../deps.js';

/** chan_b payment notifications of hardware orders (docs/hardware-sales.md): verified, checked, signalling the saga. */
export const chanBCallbackRoutes: FastifyPluginAsyncZod<AppDeps> = async () => {};
