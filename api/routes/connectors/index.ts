import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../deps.js';
import { useErrorEnvelope } from '../../plugins/errors.js';
import { catalogRoutes } from './catalog.js';
import { connectionRoutes } from './connections.js';
import { dispatchRoutes } from './dispatch.js';

/**
 * Connectors (spec §4.12, docs/connectors.md): the catalog and a user's connections, under
 * /api/connectors, for a signed-in person only (access row `connectors`), and the internal dispatch
 * of the polling workflows (its own token); errors `{ error }`.
 */
export const connectorRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  useErrorEnvelope(app, 'connectors');
  await app.register(catalogRoutes, deps);
  await app.register(connectionRoutes, deps);
  await app.register(dispatchRoutes, deps);
};
