import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../deps.js';

// To be written (issue 22).
export const mockPaymentRoutes: FastifyPluginAsyncZod<AppDeps> = async () => {};
