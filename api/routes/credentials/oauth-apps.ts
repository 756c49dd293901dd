import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  addClient, createApp, deleteApp, getApp, listApps, removeClient, reviewApp, setAppOffline, updateApp,
} from '../../../shared/credentials/oauth/app-management.js';
import { KNOWN_SCOPES } from '../../../shared/credentials/oauth/rules.js';
import type { AppDeps } from '../../deps.js';
import { principalOf } from '../../plugins/auth.js';

const error = z.object({ error: z.string(), message: z.string() }).loose();
const platform = z.enum(['web', 'desktop', 'mobile']);
const reviewStatus = z.enum(['private', 'approved', 'rejected']);
const redirectUris = z.array(z.string().min(1).max(2048)).min(1).max(20)
  .describe('exact redirect URIs (string equality); web clients need https (http on loopback only)');
const scopes = z.array(z.string().min(1).max(100)).min(1).max(20).describe(`allowed scopes, among ${KNOWN_SCOPES.join(', ')}`);
const logoUrl = z.url({ protocol: /^https?$/, message: 'expected an http(s) URL' }).max(2048);
const newClient = z.object({ platform, redirectUris, scopes }).strict();

const clientView = z.object({
  clientId: z.string().describe('public client id (`wfc-…`); no secret: PKCE S256 is required'),
  platform,
  redirectUris: z.array(z.string()),
  scopes: z.array(z.string()),
  createdAt: z.string(),
});
const appView = z.object({
  id: z.uuid(),
  ownerId: z.uuid(),
  name: z.string(),
  logoUrl: z.string().nullable(),
  reviewStatus: reviewStatus.describe('`private`: only its author may authorize it until reviewed; `rejected`: nobody may'),
  reserved: z.boolean().describe('an official app: only platform administrators may edit or delete it'),
  offline: z.boolean().describe('forced offline by a platform administrator'),
  disabledAt: z.string().nullable(),
  reviewedAt: z.string().nullable(),
  reviewNote: z.string().nullable(),
  createdAt: z.string(),
  clients: z.array(clientView),
});
// Ids are checked by the service: one that is not a UUID is a 404 like any other unknown id.
const appParams = z.object({ appId: z.string() });
const clientParams = z.object({ appId: z.string(), clientId: z.string().describe('the public client id (`wfc-…`)') });
const security = [{ bearer: [] }];

/**
 * OAuth apps over HTTP (docs/oauth.md "App lifecycle"): a signed-in person only (access row
 * `teamAdmin`: JWT; API keys, OAuth and agent tokens get 403 `This endpoint only accepts JWT
 * authentication`), so no token an app holds can manage apps.
 */
export const oauthAppRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  app.post('/oauth/apps', {
    config: { access: 'teamAdmin' },
    schema: {
      tags: ['oauth-apps'],
      summary: 'Create an OAuth app with its clients; private to its author until a platform administrator reviews it',
      security,
      body: z.object({
        name: z.string().max(200),
        logoUrl: logoUrl.nullish(),
        reserved: z.boolean().optional().describe('platform administrators only: an official app, approved at once'),
        clients: z.array(newClient).min(1).max(10).describe('one product app, several independent client ids (web, desktop, mobile)'),
      }).strict(),
      response: { 201: z.object({ app: appView }), 400: error, 401: error, 403: error },
    },
  }, async (request, reply) => {
    const created = await createApp(deps.db, principalOf(request, 'jwt').userId, request.body);
    reply.code(201);
    return { app: created };
  });

  app.get('/oauth/apps', {
    config: { access: 'teamAdmin' },
    schema: {
      tags: ['oauth-apps'],
      summary: "The caller's apps (not deleted), newest first; platform administrators may list every app (all=true), e.g. the review queue with reviewStatus=private",
      security,
      querystring: z.object({
        all: z.enum(['true', 'false']).optional().describe('every user\'s apps (platform administrators only; else 403)'),
        reviewStatus: reviewStatus.optional(),
        limit: z.coerce.number().int().min(1).max(200).optional().describe('default 100'),
        offset: z.coerce.number().int().min(0).optional(),
      }).strict(),
      response: { 200: z.object({ items: z.array(appView) }), 400: error, 401: error, 403: error },
    },
  }, async (request) => {
    const { all, ...rest } = request.query;
    return { items: await listApps(deps.db, principalOf(request, 'jwt').userId, { ...rest, all: all === 'true' }) };
  });

  app.get('/oauth/apps/:appId', {
    config: { access: 'teamAdmin' },
    schema: {
      tags: ['oauth-apps'],
      summary: 'One app with its clients (its author or a platform administrator; anyone else 404)',
      security,
      params: appParams,
      response: { 200: z.object({ app: appView }), 401: error, 403: error, 404: error },
    },
  }, async (request) => ({ app: await getApp(deps.db, principalOf(request, 'jwt').userId, request.params.appId) }));

  app.patch('/oauth/apps/:appId', {
    config: { access: 'teamAdmin' },
    schema: {
      tags: ['oauth-apps'],
      summary: "Edit the name, logo and existing clients' redirect URIs and scopes; a rejected app goes back to review",
      description: 'Reserved official apps: platform administrators only (403 `reserved_app`).',
      security,
      params: appParams,
      body: z.object({
        name: z.string().max(200).optional(),
        logoUrl: logoUrl.nullable().optional(),
        clients: z.array(z.object({ clientId: z.string().max(200), redirectUris: redirectUris.optional(), scopes: scopes.optional() }).strict())
          .max(20).optional(),
      }).strict(),
      response: { 200: z.object({ app: appView }), 400: error, 401: error, 403: error, 404: error },
    },
  }, async (request) => ({ app: await updateApp(deps.db, principalOf(request, 'jwt').userId, request.params.appId, request.body) }));

  app.post('/oauth/apps/:appId/clients', {
    config: { access: 'teamAdmin' },
    schema: {
      tags: ['oauth-apps'],
      summary: 'Add another independent client id (web, desktop, mobile); userinfo `sub` stays the user\'s global id',
      security,
      params: appParams,
      body: newClient,
      response: { 201: z.object({ client: clientView }), 400: error, 401: error, 403: error, 404: error },
    },
  }, async (request, reply) => {
    const client = await addClient(deps.db, principalOf(request, 'jwt').userId, request.params.appId, request.body);
    reply.code(201);
    return { client };
  });

  app.delete('/oauth/apps/:appId/clients/:clientId', {
    config: { access: 'teamAdmin' },
    schema: {
      tags: ['oauth-apps'],
      summary: 'Remove one client id of the app: every grant and token it issued is revoked at once',
      description: '`revokedCount` counts the access tokens that were still usable. The last client cannot be removed '
        + '(409 `last_client`: delete the app instead). Reserved official apps: platform administrators only.',
      security,
      params: clientParams,
      response: { 200: z.object({ success: z.literal(true), revokedCount: z.number().int() }), 401: error, 403: error, 404: error, 409: error },
    },
  }, async (request) => ({
    success: true as const, ...await removeClient(deps.db, principalOf(request, 'jwt').userId, request.params.appId, request.params.clientId),
  }));

  app.delete('/oauth/apps/:appId', {
    config: { access: 'teamAdmin' },
    schema: {
      tags: ['oauth-apps'],
      summary: 'Delete the app (soft): every grant and token issued to its clients is revoked at once',
      description: '`revokedCount` counts the access tokens that were still usable. Reserved official apps: platform administrators only.',
      security,
      params: appParams,
      response: { 200: z.object({ success: z.literal(true), revokedCount: z.number().int() }), 401: error, 403: error, 404: error },
    },
  }, async (request) => ({ success: true as const, ...await deleteApp(deps.db, principalOf(request, 'jwt').userId, request.params.appId) }));

  app.post('/oauth/apps/:appId/review', {
    config: { access: 'teamAdmin' },
    schema: {
      tags: ['oauth-apps'],
      summary: 'Platform administrators: approve (anyone may authorize it) or reject (nobody may; its tokens are revoked)',
      description: 'A caller who is not a platform administrator gets 403 `platform_admin_required` whatever the id.',
      security,
      params: appParams,
      body: z.object({ decision: z.enum(['approve', 'reject']), note: z.string().max(2000).nullish().describe('shown to the developer') }).strict(),
      response: { 200: z.object({ app: appView, revokedCount: z.number().int() }), 400: error, 401: error, 403: error, 404: error },
    },
  }, async (request) => reviewApp(deps.db, principalOf(request, 'jwt').userId, request.params.appId, request.body));

  app.post('/oauth/apps/:appId/offline', {
    config: { access: 'teamAdmin' },
    schema: {
      tags: ['oauth-apps'],
      summary: 'Platform administrators: force the app offline; every grant and token issued to its clients is revoked at once',
      security,
      params: appParams,
      response: { 200: z.object({ app: appView, revokedCount: z.number().int() }), 401: error, 403: error, 404: error },
    },
  }, async (request) => setAppOffline(deps.db, principalOf(request, 'jwt').userId, request.params.appId, true));

  app.post('/oauth/apps/:appId/online', {
    config: { access: 'teamAdmin' },
    schema: {
      tags: ['oauth-apps'],
      summary: 'Platform administrators: bring an offline app back; users authorize again (revoked tokens stay revoked)',
      security,
      params: appParams,
      response: { 200: z.object({ app: appView, revokedCount: z.number().int() }), 401: error, 403: error, 404: error },
    },
  }, async (request) => setAppOffline(deps.db, principalOf(request, 'jwt').userId, request.params.appId, false));
};
