import cors from '@fastify/cors';
import type { FastifyPluginAsync } from 'fastify';
import { createDataApi } from '../../../shared/data-api/service.js';
import type { AppDeps } from '../../deps.js';
import type { DataApiDeps } from './deps.js';
import { restRoutes } from './rest.js';
import { rpcRoutes } from './rpc.js';

/**
 * The frontend's data API in PostgREST's protocol (CONTRACTS.md "Frontend data access",
 * docs/data-api.md) under `/rest/v1`. Bodies are read as text here and parsed by the engine, so an
 * empty DELETE body with `Content-Type: application/json` (what supabase-js sends) is not an error
 * and a malformed one is refused in PostgREST's shape. Hidden from the OpenAPI document: it is a
 * protocol, described in docs/data-api.md.
 */
export const dataApiRoutes: FastifyPluginAsync<AppDeps & DataApiDeps> = async (app, deps) => {
  const dataApi = createDataApi({ db: deps.db, identity: deps.dataApiIdentity });
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body));
    // Any origin: the anon key is public and requests carry no cookies.
    await scope.register(cors, {
      origin: '*',
      methods: ['GET', 'HEAD', 'POST', 'PATCH', 'DELETE', 'OPTIONS'],
      allowedHeaders: ['authorization', 'apikey', 'content-type', 'accept', 'prefer', 'range', 'range-unit', 'accept-profile', 'content-profile', 'x-client-info', 'x-retry-count'],
      exposedHeaders: ['content-range', 'content-location', 'location', 'preference-applied'],
      maxAge: 600,
    });
    await scope.register(rpcRoutes, { dataApi });
    await scope.register(restRoutes, { dataApi });
  }, { prefix: '/rest/v1' });
};
