import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { toConnectorView } from '../../../shared/connectors/catalog.js';
import { listApprovedConnectors } from '../../../shared/connectors/catalog-repository.js';
import type { AppDeps } from '../../deps.js';
import { connectorError, connectorView, success, tags } from './schemas.js';

export const catalogRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { db }) => {
  app.get('/api/connectors/catalog', {
    config: { access: 'connectors' },
    schema: {
      tags, summary: 'The connectors a user can connect to (approved only)',
      response: { 200: success(connectorView.array()), 401: connectorError, 403: connectorError },
    },
  }, async () => ({ success: true as const, data: (await listApprovedConnectors(db)).map(toConnectorView) }));
};
