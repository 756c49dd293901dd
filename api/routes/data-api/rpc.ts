import type { FastifyPluginAsync } from 'fastify';
import type { DataApi } from '../../../shared/data-api/service.js';
import { answer, dataApiRequest } from './reply.js';

/** `/rest/v1/rpc/<function>`: the allowlisted functions, arguments as JSON (POST) or query parameters (GET). */
export const rpcRoutes: FastifyPluginAsync<{ dataApi: DataApi }> = async (app, { dataApi }) => {
  app.route<{ Params: { fn: string } }>({
    method: ['GET', 'HEAD', 'POST'],
    url: '/rpc/:fn',
    exposeHeadRoute: false,
    schema: { hide: true },
    handler: (request, reply) => answer(request, reply, () => dataApi.rpc(request.params.fn, dataApiRequest(request))),
  });
};
