import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { rotateTriggerSecret, viewTriggerOfDocument } from '../../../shared/webhook-triggers/service.js';
import type { AppDeps } from '../../deps.js';
import { accessCallerOf } from '../../access-caller.js';

const tags = ['webhook-triggers'];
const documentParams = z.object({ documentId: z.uuid() });

const triggerView = z.object({
  exists: z.boolean().describe('false until the document is published for the first time'),
  id: z.uuid().nullable().describe('webhook id'),
  enabled: z.boolean(),
  path: z.string().nullable().describe('relative path `/api/webhook-triggers/<id>`; prepend the API base'),
  hasSecret: z.boolean(),
  secretPrefix: z.string().nullable().describe('the first 8 characters of the secret, e.g. `wht_AbCd`'),
  deploymentId: z.uuid().nullable().describe('the newest deployment: every publish re-points the trigger'),
  lastTriggeredAt: z.string().nullable().describe('the last accepted call'),
});

/** Spec §4.2 management: view the document's trigger, generate or rotate its secret (JWT or API key). */
export const webhookTriggerManagementRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { db }) => {
  app.get('/api/webhook-triggers/by-document/:documentId', {
    config: { access: 'combined' },
    schema: {
      tags, summary: "The document's webhook trigger (never its secret); project access",
      params: documentParams, response: { 200: triggerView },
    },
  }, async (request) => viewTriggerOfDocument(db, accessCallerOf(request), request.params.documentId));

  app.post('/api/webhook-triggers/by-document/:documentId/rotate-secret', {
    config: { access: 'combined' },
    schema: {
      tags, summary: 'Generate or rotate the webhook secret; the plaintext is returned only here (project administrator or document owner)',
      description: 'The previous secret stops working at once. 400 `webhook_trigger_missing` when the document has not been published.',
      params: documentParams,
      response: { 200: z.object({ id: z.uuid(), path: z.string(), secret: z.string().describe('`wht_…`; store it now, it is not shown again') }) },
    },
  }, async (request, reply) => {
    reply.header('cache-control', 'no-store');
    return rotateTriggerSecret(db, accessCallerOf(request), request.params.documentId);
  });
};
