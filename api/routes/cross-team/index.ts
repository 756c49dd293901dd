import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../deps.js';
import { crossTeamManagementRoutes } from './manage.js';
import { crossTeamProxyRoutes } from './proxy.js';

/** Cross-team bindings (docs/cross-team.md): management by the owning team, list and proxy for the grantee. */
export const crossTeamRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  await app.register(crossTeamManagementRoutes, deps);
  await app.register(crossTeamProxyRoutes, deps);
};
