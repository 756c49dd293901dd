import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError, notFound } from '../../../shared/errors.js';
import { contentRange, parseRange, unsatisfiedRange } from '../../../shared/storage/byte-ranges.js';
import { FileNotFoundInStoreError, isValidStorageKey } from '../../../shared/storage/file-store.js';
import { createObjectStore } from '../../../shared/storage/object-store.js';
import { objectUrlSigner, OBJECT_STORE_PATH } from '../../../shared/storage/signed-urls.js';
import type { AppDeps } from '../../deps.js';

/** `attachment`, with the name as a plain quoted string when it is one and in RFC 5987 form always. */
function attachment(name: string | undefined): string {
  if (!name) return 'attachment';
  const plain = /^[\x20-\x7e]+$/.test(name) ? `; filename="${name.replace(/["\\]/g, '_')}"` : '';
  return `attachment${plain}; filename*=UTF-8''${encodeURIComponent(name)}`;
}

/**
 * The object store's signed URLs (shared/storage/signed-urls.ts): no credential, the URL is the
 * permission. GET and HEAD only; exact lengths and single ranges, streamed from disk.
 */
export const objectStoreRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  const signer = objectUrlSigner(deps.secrets);
  const store = createObjectStore(deps.config);

  app.route({
    method: ['GET', 'HEAD'],
    url: `${OBJECT_STORE_PATH}/*`,
    schema: {
      tags: ['storage'],
      summary: 'Download an object by a signed URL handed out by the service (e.g. the firmware redirect)',
      // Read by the verifier as given: a missing or repeated value is a URL we did not sign (403), not a 400.
      querystring: z.object({
        expires: z.unknown().optional().describe('Unix seconds'),
        name: z.unknown().optional().describe('the file name to save as'),
        sig: z.unknown().optional().describe('base64url HMAC-SHA256'),
      }),
    },
    handler: async (request, reply) => {
      const key = (request.params as { '*': string })['*'];
      const nowMs = Date.now();
      const verdict = signer.verify(key, request.query, nowMs);
      if (!verdict.ok) {
        throw verdict.reason === 'expired'
          ? new AppError(403, 'url_expired', 'This download link has expired: ask for a new one')
          : new AppError(403, 'invalid_signature', 'This download link is not valid');
      }
      const info = isValidStorageKey(key) ? await store.stat(key) : null;
      if (!info) throw notFound('Object');

      const range = parseRange(request.headers.range, info.size);
      if (range.kind === 'unsatisfiable') {
        throw new AppError(416, 'range_not_satisfiable', `Ask for one range within the object's ${info.size} bytes`, {}, { 'content-range': unsatisfiedRange(info.size) });
      }
      const span = range.kind === 'partial' ? { start: range.start, end: range.end } : undefined;
      // Opened before any header is set, so that a 404 carries none of a download's.
      const body = request.method === 'HEAD' ? undefined : await store.get(key, span).catch((error: unknown) => {
        // Deleted between stat and open.
        throw error instanceof FileNotFoundInStoreError ? notFound('Object') : error;
      });
      // Private: the URL is a capability, so no shared cache may keep its bytes; a browser may, but
      // only while the link itself is valid (the bytes behind a content key never change).
      const remaining = Math.max(0, verdict.ref.expires - Math.floor(nowMs / 1000));
      reply.headers({
        'content-type': 'application/octet-stream',
        'content-disposition': attachment(verdict.ref.name),
        'accept-ranges': 'bytes',
        'cache-control': `private, max-age=${remaining}`,
        // The public firmware route allows any origin and redirects here: the bytes must be readable
        // cross-origin too, or a browser following the redirect would drop them.
        'access-control-allow-origin': '*',
        'access-control-expose-headers': 'content-length, content-range, accept-ranges, content-disposition',
        // Always the exact length: a stream is never sent chunked.
        'content-length': String(span ? span.end - span.start + 1 : info.size),
      });
      if (span) reply.code(206).header('content-range', contentRange(span.start, span.end, info.size));
      return reply.send(body);
    },
  });
};
