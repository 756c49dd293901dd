import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../deps.js';
import { hardwareCallbackRoutes } from './callbacks.js';
import { chanBCallbackRoutes } from './chan-b-callback.js';
import { friendCodeRoutes } from './friend-codes.js';
import { myOrderRoutes } from './my-orders.js';
import { phoneAuthRoutes } from './phone-auth.js';
import { publicOrderRoutes } from './public-orders.js';

/** Hardware sales (docs/hardware-sales.md): phone login, the public shop, the buyer's orders, the channel callbacks. */
export const hardwareSalesRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  await app.register(phoneAuthRoutes, deps);
  await app.register(publicOrderRoutes, { ...deps, prefix: '/public/hardware-sales' });
  await app.register(myOrderRoutes, deps);
  await app.register(friendCodeRoutes, deps);
  await app.register(hardwareCallbackRoutes, deps);
  await app.register(chanBCallbackRoutes, deps);
};
