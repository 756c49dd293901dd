import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  CLIENT_CONFIG_GROUPS, ClientConfigView, loadClientConfigRows, requestOrigin, selectGroups,
} from '../../../shared/public-config/client-config.js';
import { ifNoneMatchHits } from '../../../shared/storage/byte-ranges.js';
import type { AppDeps } from '../../deps.js';
import { publicError, useInternalErrorCode } from '../../plugins/public-envelope.js';

const tags = ['public-config'];

// A repeated parameter arrives as a list: joined, it is just a longer comma list (spec §7.6 has no 400 here).
const queryText = z.union([z.string(), z.array(z.string())]).optional();
const joined = (value: string | string[] | undefined) => (Array.isArray(value) ? value.join(',') : value);

const clientConfigView = z.object({
  version: z.int().describe('ms timestamp of the newest row in this view; 0 when none'),
  updatedAt: z.string().nullable(),
  groups: z.record(z.string(), z.record(z.string(), z.unknown())).describe(`keys among ${CLIENT_CONFIG_GROUPS.join(', ')}`),
});

// The body depends on the host the client reached (endpoint origins): shared caches must key on it.
const VARY = 'Host, X-Forwarded-Host, X-Forwarded-Proto';

/**
 * GET /public/client-config (spec §4.10, docs/public-config.md). A database failure is 500
 * `INTERNAL_ERROR`; an unreachable one 503 `dependency_unavailable` with Retry-After, as elsewhere.
 */
export const clientConfigRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  useInternalErrorCode(app);
  const view = new ClientConfigView(() => loadClientConfigRows(deps.db), (listener) => deps.settings.onChange(listener));
  app.addHook('onClose', async () => view.close());

  app.get('/client-config', {
    schema: {
      tags, summary: 'The mobile client configuration: whitelisted groups, with an ETag for conditional GETs',
      description: '`groups`: comma list (default all; unknown names ignored). `platform`, `appVersion`: reserved, no effect. '
        + 'A matching `If-None-Match` answers 304. `Cache-Control: no-cache`: revalidate every time, so changes show within seconds.',
      querystring: z.object({ groups: queryText, platform: queryText, appVersion: queryText }),
      response: { 200: clientConfigView, 304: z.undefined().describe('Not Modified: the If-None-Match matched; no body'), 500: publicError, 503: publicError },
    },
  }, async (request, reply) => {
    const groups = selectGroups(joined(request.query.groups));
    const { body, etag } = await view.get(groups, requestOrigin(request.protocol, request.host));
    reply.header('etag', etag).header('cache-control', 'no-cache').header('vary', VARY);
    if (ifNoneMatchHits(request.headers['if-none-match'], etag)) return reply.code(304).send();
    // Sent as the exact bytes the ETag was computed from (a string skips the serializer).
    return reply.type('application/json; charset=utf-8').send(body as unknown as z.infer<typeof clientConfigView>);
  });
};
