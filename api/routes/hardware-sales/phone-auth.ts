import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../deps.js';

/** Phone login (spec §4.8): send-otp, verify, /my/phone/bind. */
export const phoneAuthRoutes: FastifyPluginAsyncZod<AppDeps> = async () => {};
