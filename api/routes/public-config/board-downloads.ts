import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../deps.js';

// To be written (issue 21).
export const boardDownloadRoutes: FastifyPluginAsyncZod<AppDeps> = async () => {};
