import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { createRelease, getRelease, listReleases, publishReleaseVersion } from '../../../shared/releases/service.js';
import { releaseConfigSchema, releaseRateLimitSchema } from '../../../shared/releases/config.js';
import { releaseEndpointsSchema } from '../../../shared/releases/router.js';
import type { AppDeps } from '../../deps.js';
import { accessCallerOf } from '../../access-caller.js';

const tags = ['releases'];
const projectParams = z.object({ projectId: z.uuid() });
const releaseParams = z.object({ releaseId: z.uuid() });

const releaseView = z.object({
  id: z.string(), projectId: z.string(), alias: z.string(), gatewayPath: z.string(),
  config: z.unknown().describe('as stored'),
  effectiveConfig: z.object({ requireAuth: z.boolean(), rateLimit: releaseRateLimitSchema, ownRateLimit: z.boolean() })
    .describe('what the gateway applies (fail-closed auth; the global limit when the stored one is invalid)'),
  anonymousApiKeyId: z.string().nullable(), versions: z.array(z.string()).describe('newest first'),
  createdAt: z.string(), updatedAt: z.string(),
});
const versionView = z.object({ id: z.string(), releaseId: z.string(), version: z.string(), endpoints: z.array(z.unknown()), createdAt: z.string() });

/** Release management (docs/releases.md): project members read, project administrators write. */
export const releaseManageRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { db }) => {
  app.post('/projects/:projectId/releases', {
    config: { access: 'combined' },
    schema: {
      tags, summary: 'Create a release (an alias for the gateway) in a project (project administrators)',
      params: projectParams,
      body: z.object({
        alias: z.string().describe('lower-case letters, digits and inner hyphens; unique across the service'),
        config: releaseConfigSchema.strict().optional(),
        anonymousApiKeyId: z.uuid().nullish().describe('an API key of the project\'s team that pays for anonymous calls'),
      }),
      response: { 201: z.object({ release: releaseView }) },
    },
  }, async (request, reply) => {
    const release = await createRelease(db, accessCallerOf(request), { projectId: request.params.projectId, ...request.body });
    reply.code(201);
    return { release };
  });

  app.get('/projects/:projectId/releases', {
    config: { access: 'combined' },
    schema: { tags, summary: 'List the project releases, newest first', params: projectParams, response: { 200: z.object({ releases: z.array(releaseView) }) } },
  }, async (request) => ({ releases: await listReleases(db, accessCallerOf(request), request.params.projectId) }));

  app.get('/releases/:releaseId', {
    config: { access: 'combined' },
    schema: {
      tags, summary: 'Read a release with its published versions (newest first)', params: releaseParams,
      response: { 200: z.object({ release: releaseView, versions: z.array(versionView) }) },
    },
  }, async (request) => getRelease(db, accessCallerOf(request), request.params.releaseId));

  app.post('/releases/:releaseId/versions', {
    config: { access: 'combined' },
    schema: {
      tags, summary: 'Publish a version of the release router tree (project administrators)',
      params: releaseParams,
      body: z.object({
        version: z.string().optional().describe('MAJOR.MINOR; default: the next minor after the highest published'),
        endpoints: releaseEndpointsSchema,
      }),
      response: { 201: z.object({ version: versionView }) },
    },
  }, async (request, reply) => {
    const version = await publishReleaseVersion(db, accessCallerOf(request), request.params.releaseId, request.body);
    reply.code(201);
    return { version };
  });
};
