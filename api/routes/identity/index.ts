import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { chooseLanguage, ensureDefaultProject } from '../../../shared/identity/default-project.js';
import { listTeamProjects } from '../../../shared/identity/service.js';
import { accessCallerOf } from '../../access-caller.js';
import type { AppDeps } from '../../deps.js';
import { principalOf } from '../../plugins/auth.js';

const myResponse = z.union([
  z.object({ userId: z.string(), email: z.string(), metadata: z.record(z.string(), z.unknown()) }).describe('jwt'),
  z.object({ userId: z.string(), teamId: z.string(), apiKeyId: z.string() }).describe('api-key'),
  z.object({ userId: z.string(), teamId: z.string().nullable(), bindingId: z.string() }).describe('agent'),
  z.object({ scheduleId: z.string(), teamId: z.string(), deploymentId: z.string() }).describe('schedule'),
]);

const defaultProjectResponse = z.object({
  success: z.literal(true),
  data: z.object({
    team: z.object({ id: z.string(), slug: z.string(), name: z.string() }),
    project: z.object({ id: z.string(), team_id: z.string(), slug: z.string(), name: z.string(), system_purpose: z.literal('personal_default') }),
    permissions: z.object({ storage_write: z.boolean(), deletion_locked: z.boolean() }),
  }),
});

const projectView = z.object({
  id: z.string(), teamId: z.string(), slug: z.string(), name: z.string(),
  systemPurpose: z.string().nullable().describe('`personal_default` for the personal default project (4.4), else null'),
  deletionLocked: z.boolean(), createdAt: z.string(),
});

/** The current user (spec §4.4): who is calling, and the personal default project; a team's projects. */
export const identityRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  app.get('/my', {
    config: { access: 'currentUser' },
    schema: { tags: ['identity'], summary: 'Who is calling; the fields depend on the credential kind', response: { 200: myResponse } },
  }, async (request) => {
    const p = principalOf(request, 'jwt', 'api-key', 'agent', 'schedule');
    switch (p.kind) {
      case 'jwt': return { userId: p.userId, email: p.email, metadata: p.metadata };
      case 'api-key': return { userId: p.userId, teamId: p.teamId, apiKeyId: p.apiKeyId };
      case 'agent': return { userId: p.userId, teamId: p.teamId, bindingId: p.bindingId };
      case 'schedule': return { scheduleId: p.scheduleId, teamId: p.teamId, deploymentId: p.deploymentId };
    }
  });

  app.post('/my/default-project/ensure', {
    config: { access: 'defaultProject' },
    schema: {
      tags: ['identity'],
      summary: 'Get or create the personal default project (idempotent)',
      body: z.object({ lang: z.string().max(35).optional() }).nullish(),
      response: { 200: defaultProjectResponse },
    },
  }, async (request) => {
    // The user always comes from the credential, never from the body or query.
    const { userId } = principalOf(request, 'jwt', 'oauth');
    const header = (name: string) => { const v = request.headers[name]; return typeof v === 'string' ? v : undefined; };
    const lang = chooseLanguage(request.body?.lang, header('accept-language'), header('x-server-mode'));
    return { success: true as const, data: await ensureDefaultProject(deps.db, userId, lang) };
  });

  app.get('/teams/:teamId/projects', {
    config: { access: 'combined' },
    schema: {
      tags: ['identity'],
      summary: "A team's projects, oldest first (its members and its API keys; anyone else 404)",
      params: z.object({ teamId: z.uuid() }),
      response: { 200: z.object({ projects: z.array(projectView) }) },
    },
  }, async (request) => ({ projects: await listTeamProjects(deps.db, accessCallerOf(request), request.params.teamId) }));
};
