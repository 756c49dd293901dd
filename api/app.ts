import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from './deps.js';
import { authPlugin } from './plugins/auth.js';
import { errorsPlugin } from './plugins/errors.js';
import { gracefulClosePlugin } from './plugins/graceful-close.js';
import { metricsPlugin } from './plugins/metrics.js';
import { openapiPlugin } from './plugins/openapi.js';
import { agentRoutes } from './routes/credentials/agents.js';
import { documentRoutes } from './routes/documents/index.js';
import { agentCredentialRoutes } from './routes/credentials/agent-credentials.js';
import { runFollowUpRoutes } from './routes/app-runs/follow-up.js';
import { approvalRoutes } from './routes/app-runs/approvals.js';
import { approvalLinkRoutes } from './routes/app-runs/approval-link.js';
import { callbackRoutes } from './routes/app-runs/callbacks.js';
import { retryRoutes } from './routes/app-runs/retry.js';
import { runRoutes } from './routes/app-runs/run.js';
import { v1Routes } from './routes/app-runs/v1.js';
import { apiKeyRoutes } from './routes/credentials/api-keys.js';
import { credentialsRoutes } from './routes/credentials/index.js';
import { oauthAuthorizationRoutes } from './routes/credentials/oauth-authorizations.js';
import { docsAuthRoutes } from './routes/credentials/docs-auth.js';
import { oauthRoutes } from './routes/credentials/oauth/index.js';
import { identityRoutes } from './routes/identity/index.js';
import { platformRoutes } from './routes/platform/index.js';
import { storageRoutes } from './routes/storage/index.js';
import { myRunsRoutes } from './routes/app-runs/runs.js';
import { scheduleRoutes } from './routes/schedules/index.js';
import { webhookTriggerRoutes } from './routes/webhook-triggers/index.js';
import { releaseRoutes } from './routes/releases/index.js';
import { crossTeamRoutes } from './routes/cross-team/index.js';
import { llmProviderRoutes } from './routes/llm-providers/index.js';
import { hardwareSalesRoutes } from './routes/hardware-sales/index.js';
import { publicConfigRoutes } from './routes/public-config/index.js';
import { billingRoutes } from './routes/billing/index.js';
import { connectorRoutes } from './routes/connectors/index.js';
import { projectGraphRoutes } from './routes/project-graph/index.js';
import { dataApiRoutes } from './routes/data-api/index.js';
import { dataApiStorageRoutes } from './routes/data-api/storage.js';
import { realtimeRoutes } from './routes/realtime/index.js';
import { createDataApiIdentity } from '../shared/data-api/identity.js';

export type { AppDeps } from './deps.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Registers every plugin and route group on `app`. Tests and `main.ts` both go through here. */
export async function registerApp(app: FastifyInstance, deps: AppDeps): Promise<void> {
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  await app.register(gracefulClosePlugin);
  await app.register(errorsPlugin);
  await app.register(openapiPlugin);
  await app.register(metricsPlugin);
  await app.register(authPlugin, { authenticator: deps.authenticator });
  await app.register(platformRoutes, deps);
  await app.register(credentialsRoutes, deps);
  await app.register(oauthRoutes, deps);
  await app.register(oauthAuthorizationRoutes, deps);
  await app.register(docsAuthRoutes, deps);
  await app.register(apiKeyRoutes, deps);
  await app.register(runRoutes, deps);
  await app.register(runFollowUpRoutes, deps);
  await app.register(approvalRoutes, deps);
  await app.register(approvalLinkRoutes, deps);
  await app.register(callbackRoutes, deps);
  await app.register(retryRoutes, deps);
  await app.register(v1Routes, deps);
  await app.register(identityRoutes, deps);
  await app.register(agentRoutes, deps);
  await app.register(agentCredentialRoutes, deps);
  await app.register(documentRoutes, deps);
  await app.register(storageRoutes, deps);
  await app.register(myRunsRoutes, deps);
  await app.register(scheduleRoutes, deps);
  await app.register(webhookTriggerRoutes, deps);
  await app.register(releaseRoutes, deps);
  await app.register(crossTeamRoutes, deps);
  await app.register(llmProviderRoutes, deps);
  await app.register(hardwareSalesRoutes, deps);
  await app.register(publicConfigRoutes, deps);
  await app.register(billingRoutes, deps);
  await app.register(connectorRoutes, deps);
  await app.register(projectGraphRoutes, deps);
  // One identity for the data API's REST, storage and realtime: one anon-key derivation and one
  // memory of verified JWTs, so a token checked for a read is not checked again for a channel.
  const dataApiDeps = { ...deps, dataApiIdentity: createDataApiIdentity(deps) };
  await app.register(dataApiRoutes, dataApiDeps);
  await app.register(dataApiStorageRoutes, dataApiDeps);
  await app.register(realtimeRoutes, dataApiDeps);
}

/**
 * `TRUST_PROXY` as Fastify's `trustProxy`: which peers' `X-Forwarded-*` headers count for
 * `request.ip`, `request.host` and `request.protocol` (docs/public-config.md "Behind a proxy").
 */
export function trustProxyOption(value: string): boolean | string[] {
  if (value === 'true') return true;
  if (value === 'false') return false;
  return value.split(',').map((entry) => entry.trim()).filter(Boolean);
}

/** A ready-to-listen Fastify instance. `logger` defaults to pino JSON at LOG_LEVEL. */
export async function buildApp(deps: AppDeps, options: { logger?: FastifyServerOptions['logger'] } = {}) {
  const app = Fastify({
    logger: options.logger ?? { level: deps.config.LOG_LEVEL },
    bodyLimit: deps.config.BODY_LIMIT_BYTES,
    // Keep a caller's (or proxy's) request id when it is sane, so logs join up across hops;
    // genReqId reads the header itself so that an unsafe one is replaced rather than echoed.
    requestIdHeader: false,
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    return503OnClosing: true,
    trustProxy: trustProxyOption(deps.config.TRUST_PROXY),
  }).withTypeProvider<ZodTypeProvider>();
  await registerApp(app, deps);
  return app;
}
