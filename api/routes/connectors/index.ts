import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../deps.js';

// To be written (issue 23): catalog and connections (docs/connectors.md).
export const connectorRoutes: FastifyPluginAsyncZod<AppDeps> = async () => {};
