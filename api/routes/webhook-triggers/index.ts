import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../deps.js';
import { webhookTriggerCallRoutes } from './call.js';
import { webhookTriggerManagementRoutes } from './manage.js';

/**
 * Spec §4.2. Two encapsulated groups: management keeps the standard error envelope, the trigger
 * call has the webhook envelope and its own body handling.
 */
export const webhookTriggerRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  // Webhook senders and fetch() often send `Content-Type: application/json` with no body; both
  // POST routes take that as "no body" (the call's inputs are then `{}`) instead of 400 invalid_json.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '') done(null, undefined);
    else parseJson(request, body as string, done);
  });
  await app.register(webhookTriggerManagementRoutes, deps);
  await app.register(webhookTriggerCallRoutes, { ...deps, prefix: '/api/webhook-triggers' });
};
