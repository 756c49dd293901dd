import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { testConnection } from '../../../shared/connectors/connection-test.js';
import { createConnection, createConnectionBody, listConnections, revokeConnection, toConnectionView } from '../../../shared/connectors/connections.js';
import type { AppDeps } from '../../deps.js';
import { principalOf } from '../../plugins/auth.js';
import { rejectInvalid } from '../../plugins/public-envelope.js';
import { connectionView, errorResponses, success, tags } from './schemas.js';

// A malformed id is the same 404 as a missing one (shared code checks it), never a 400.
const connectionParams = z.object({ connectionId: z.string() });
const testResult = z.object({
  ok: z.boolean(),
  errorCode: z.string().optional().describe('a machine code (spec §4.12 test rule 3): map it to text, never show it'),
});

export const connectionRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  const userOf = (request: Parameters<typeof principalOf>[0]) => principalOf(request, 'jwt').userId;

  app.get('/api/connectors/connections', {
    config: { access: 'connectors' },
    schema: { tags, summary: 'The caller\'s connections (revoked ones included); masks only', response: { 200: success(connectionView.array()), ...errorResponses } },
  }, async (request, reply) => {
    reply.header('cache-control', 'no-store');
    return { success: true as const, data: (await listConnections(deps.db, userOf(request))).map(toConnectionView) };
  });

  app.post('/api/connectors/connections', {
    config: { access: 'connectors' },
    attachValidation: true,
    schema: {
      tags, summary: 'Connect an account: fields checked for completeness only (no network); starts `pending`',
      description: 'Credentials are sealed per field; only `credentialMask` is ever returned. Call test right after.',
      body: createConnectionBody,
      response: { 201: success(connectionView), ...errorResponses },
    },
  }, async (request, reply) => {
    rejectInvalid(request, () => 'invalid_body');
    const row = await createConnection(deps, userOf(request), request.body);
    reply.code(201).header('cache-control', 'no-store');
    return { success: true as const, data: toConnectionView(row) };
  });

  app.post('/api/connectors/connections/:connectionId/test', {
    config: { access: 'connectors' },
    schema: {
      tags, summary: 'One light probe of the account; success → active, credential_invalid → invalid, anything else unchanged',
      params: connectionParams, response: { 200: success(testResult), ...errorResponses },
    },
  }, async (request) => ({ success: true as const, data: await testConnection(deps, userOf(request), request.params.connectionId) }));

  app.delete('/api/connectors/connections/:connectionId', {
    config: { access: 'connectors' },
    schema: {
      tags, summary: 'Revoke a connection: it stays listed as `revoked`, its credentials are dropped',
      params: connectionParams, response: { 200: z.object({ success: z.literal(true) }), ...errorResponses },
    },
  }, async (request) => {
    await revokeConnection(deps.db, userOf(request), request.params.connectionId);
    return { success: true as const };
  });
};
