import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../deps.js';
import { releaseGatewayRoutes } from './gateway.js';
import { releaseManageRoutes } from './manage.js';

/** The `releases` capability: management API and the `/r/:alias/:version/*` gateway. */
export const releaseRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  await app.register(releaseManageRoutes, deps);
  await app.register(releaseGatewayRoutes, deps);
};
