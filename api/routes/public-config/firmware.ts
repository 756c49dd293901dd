import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../../shared/errors.js';
import { downloadOrigin, findFirmware, firmwareModules, firmwareRefSchema } from '../../../shared/public-config/firmware.js';
import { objectKeys } from '../../../shared/storage/object-store.js';
import { objectUrlSigner, signedObjectUrl } from '../../../shared/storage/signed-urls.js';
import type { AppDeps } from '../../deps.js';
import { publicError } from '../../plugins/public-envelope.js';


/** `GET /public/firmware/:model/:module/:fileName` (spec §4.10): 302 to a short-lived signed URL of the object store. */
export const firmwareRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  const signer = objectUrlSigner(deps.secrets);

  app.get('/firmware/:model/:module/:fileName', {
    schema: {
      tags: ['public-config'],
      summary: 'Device firmware: 302 to a signed URL of its bytes, valid for public.firmware_url_ttl_seconds',
      // Checked in the handler, so that a bad value is the public INVALID_REQUEST rather than the generic schema error.
      params: z.object({
        model: z.string().describe('[A-Za-z0-9._-]{1,64}, no ".."'),
        module: z.string().describe(firmwareModules.join(' or ')),
        fileName: z.string().describe('letters, digits, ".", "_", "+", "-"; no "/", ".." or NUL'),
      }),
      response: { 400: publicError, 404: publicError, 503: publicError },
    },
  }, async (request, reply) => {
    const parsed = firmwareRefSchema.safeParse(request.params);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new AppError(400, 'INVALID_REQUEST', `${String(issue.path[0])}: ${issue.message}`);
    }
    const ref = parsed.data;
    const firmware = await findFirmware(deps.db, ref);
    if (!firmware) throw new AppError(404, 'NOT_FOUND', `No ${ref.module} firmware ${ref.fileName} for model ${ref.model}`);
    if (!signer.canSign) throw new AppError(503, 'NOT_CONFIGURED', 'SECRETS_KEY is not set: download links cannot be signed');
    const origin = downloadOrigin(deps.config.PUBLIC_BASE_URL, request);
    if (!origin) throw new AppError(400, 'INVALID_REQUEST', 'The Host header is not a host name');
    const ttlSeconds = await deps.settings.get('public.firmware_url_ttl_seconds');
    const location = signedObjectUrl(signer, origin, { key: objectKeys.firmware(firmware.sha256), name: firmware.fileName }, ttlSeconds);
    // The link dies in minutes: no cache may keep the redirect longer than that, so none keeps it.
    return reply.header('cache-control', 'no-store').redirect(location, 302);
  });
};
