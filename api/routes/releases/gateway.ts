import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ApiSchemaField } from '../../../shared/documents/graph.js';
import { startAppRun } from '../../../shared/app-runs/run-service.js';
import { AppError } from '../../../shared/errors.js';
import { asRateLimit } from '../../../shared/releases/config.js';
import { anonymousPayer, endpointDeployment, matchGatewayCall } from '../../../shared/releases/gateway.js';
import { coerceQueryInputs, mapFields } from '../../../shared/releases/router.js';
import type { AppDeps } from '../../deps.js';
import { replyWithRunResult, runResultSchema } from '../app-runs/run-reply.js';
import { authenticateGatewayCall, rateLimitBucket, runCallerOf } from './gateway-auth.js';
import { RUN_BODY_CEILING_BYTES, checkRunBodySizeBeforeParsing, runStarter } from '../app-runs/run-route-kit.js';

const GATEWAY_PATH = '/api/released-app/r/:alias/:version/*';

type GatewayRequest = FastifyRequest<{ Params: { alias: string; version: string; '*': string } }>;

/**
 * ALL /api/released-app/r/:alias/:version/* (spec §4.1): alias → version → endpoint → deployment,
 * authentication decided per endpoint (fail-closed), the release's rate limit, then one run whose
 * JSON result is the answer (never a stream, never `globalCtx`).
 */
export const releaseGatewayRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  checkRunBodySizeBeforeParsing(app, deps);

  async function call(request: GatewayRequest, reply: FastifyReply, given: Record<string, unknown>) {
    const path = `/${request.params['*']}`;
    const matched = await matchGatewayCall(deps.db, { alias: request.params.alias, version: request.params.version, method: request.method, path });
    const authRequired = matched.config.requireAuth && !matched.endpoint.skipAuth;
    const caller = await authenticateGatewayCall(deps.authenticator, request, request.url.split('?')[0]!, authRequired);

    const { rateLimit } = matched.config;
    const decision = await deps.rateLimiter.consume(rateLimitBucket(matched.release.id, caller, request.ip), asRateLimit(rateLimit));
    reply.headers({
      'x-ratelimit-limit': String(rateLimit.maxRequests), 'x-ratelimit-remaining': String(decision.remaining),
      'x-ratelimit-reset': String(decision.retryAfterSeconds),
    });
    if (!decision.allowed) {
      reply.header('retry-after', String(decision.retryAfterSeconds));
      throw new AppError(429, 'Too many requests, please try again later', `The limit of this release is ${rateLimit.maxRequests} calls per ${rateLimit.windowSeconds} s`);
    }

    const deployment = await endpointDeployment(deps.db, matched.endpoint);
    const runCaller = await runCallerOf(caller, () => anonymousPayer(deps.db, matched.release));

    // Path parameters win over same-named body or query fields: the URL names the resource.
    const mapped = mapFields({ ...given, ...matched.params }, matched.endpoint.fieldMapping);
    const inputs = request.method === 'GET' ? coerceQueryInputs(deployment.api_schema as { inputs: ApiSchemaField[] }, mapped) : mapped;
    // trace is off, so the result carries no globalCtx (spec §4.1: never on the gateway).
    const run = await startAppRun(runStarter(deps, request), { target: { deployment }, caller: runCaller, inputs });
    return replyWithRunResult(deps, reply, run);
  }

  const params = z.object({ alias: z.string(), version: z.string().describe('`1.0`, `^1.0` or `latest`'), '*': z.string() });
  const description = 'Credentials (API key, OAuth `chat:completions`, agent token) per release config; see docs/releases.md. '
    + 'Path `:params` are inputs too, and win over same-named fields.';
  const response = {
    200: runResultSchema,
    // Also the error handler's `request_body_too_large`, so only the envelope is fixed here.
    413: z.object({ error: z.string(), message: z.string() }).loose().describe('`request_body_too_large`, or `response_too_large` with runId, actualBytes, limitBytes'),
  };

  // Fastify refuses a body schema on GET, so GET (inputs from the query) and the other methods
  // (inputs from the JSON body) are two routes over one handler.
  app.get(GATEWAY_PATH, {
    schema: {
      tags: ['releases'], summary: 'Call a released app with GET: inputs from the query string', description, params,
      querystring: z.record(z.string(), z.unknown()).describe('the public fields'), response,
    },
  }, (request, reply) => call(request, reply, request.query));

  app.route({
    method: ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    url: GATEWAY_PATH,
    bodyLimit: RUN_BODY_CEILING_BYTES,
    schema: {
      tags: ['releases'], summary: 'Call a released app: runs the endpoint matching METHOD and path, answers the JSON run result', description, params,
      body: z.record(z.string(), z.unknown()).nullish().describe('the public fields; may be omitted'), response,
    },
    handler: (request, reply) => call(request, reply, request.body ?? {}),
  });
};
