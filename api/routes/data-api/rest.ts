import type { FastifyPluginAsync } from 'fastify';
import type { DataApi } from '../../../shared/data-api/service.js';
import { answer, dataApiRequest } from './reply.js';

/** `/rest/v1/<relation>`: PostgREST's table endpoints (docs/data-api.md). */
export const restRoutes: FastifyPluginAsync<{ dataApi: DataApi }> = async (app, { dataApi }) => {
  app.route<{ Params: { relation: string } }>({
    method: ['GET', 'HEAD', 'POST', 'PATCH', 'DELETE', 'PUT'],
    url: '/:relation',
    exposeHeadRoute: false,
    schema: { hide: true },
    handler: (request, reply) => answer(request, reply, () => dataApi.relation(request.params.relation, dataApiRequest(request))),
  });
};
