import cors from '@fastify/cors';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../deps.js';
import { useErrorEnvelope } from '../../plugins/errors.js';
import { bluetoothFilterRoutes } from './bluetooth-filters.js';
import { boardDownloadRoutes } from './board-downloads.js';
import { clientConfigRoutes } from './client-config.js';
import { firmwareRoutes } from './firmware.js';
import { graphFeatureRoutes } from './graph-feature.js';
import { jssdkSignatureRoutes } from './jssdk-signature.js';
import { paymentCatalogRoutes } from './payment-catalog.js';

/**
 * Public configuration and downloads (docs/public-config.md, spec §4.10): no authentication, any
 * origin, errors as `{ success: false, error: { code, message } }`. Registered under the `/public`
 * prefix, which also bounds CORS: its preflight route is `OPTIONS /public/*`, not every path.
 */
export const publicConfigRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  await app.register(publicScope, { ...deps, prefix: '/public' });
};

const publicScope: FastifyPluginAsyncZod<AppDeps> = async (app, options) => {
  // Passed on without the prefix, which the routes below inherit already.
  const { prefix: _mounted, ...deps } = options as AppDeps & { prefix?: string };
  useErrorEnvelope(app, 'public');
  await app.register(cors, {
    origin: '*',
    methods: ['GET', 'HEAD', 'OPTIONS'],
    allowedHeaders: ['content-type', 'if-none-match', 'range', 'if-range'],
    // A cross-origin script may read what a resumable download and a conditional GET need.
    exposedHeaders: ['etag', 'content-length', 'content-range', 'accept-ranges', 'content-disposition', 'retry-after'],
    maxAge: 600,
  });
  await app.register(clientConfigRoutes, deps);
  await app.register(firmwareRoutes, deps);
  await app.register(boardDownloadRoutes, deps);
  await app.register(bluetoothFilterRoutes, deps);
  await app.register(paymentCatalogRoutes, deps);
  await app.register(graphFeatureRoutes, deps);
  await app.register(jssdkSignatureRoutes, deps);
};
