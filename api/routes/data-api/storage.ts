import cors from '@fastify/cors';
import multipart from '@fastify/multipart';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import { z } from 'zod';
import { DataApiError } from '../../../shared/data-api/errors.js';
import {
  findPublicObject, putObject, removeObjects, StorageApiError, storageErrors, type StorageIdentity,
} from '../../../shared/storage/banners.js';
import { contentRange, parseRange, unsatisfiedRange } from '../../../shared/storage/byte-ranges.js';
import { FileNotFoundInStoreError } from '../../../shared/storage/file-store.js';
import { createObjectStore } from '../../../shared/storage/object-store.js';
import type { AppDeps } from '../../deps.js';
import type { DataApiDeps } from './deps.js';

// The data API's storage at `/storage/v1` (CONTRACTS.md "Frontend data access", docs/storage.md
// "Data API storage") in the storage protocol supabase-js speaks: public objects of bucket
// `banners` for anyone, upload and remove with a user JWT. Every refusal is in the storage API's
// JSON shape `{ statusCode, code, error, message }`. Hidden from the OpenAPI document: a protocol.

// The protocol's operation words where a bucket name would stand (`/object/list/<bucket>`, …).
const OPERATIONS = new Set(['list', 'sign', 'move', 'copy', 'info', 'upload', 'authenticated', 'public', 'render']);

const unsupported = (request: FastifyRequest) => storageErrors.invalidRequest(
  `Unsupported by this data API's storage: ${request.method} ${request.url.split('?')[0]} (supported: public objects of bucket banners, upload, update and remove)`,
);

const removeBody = z.object({ prefixes: z.array(z.string().max(1024)).min(1).max(1000) });
const REMOVE_BODY_LIMIT = 256 * 1024;

/** Anything thrown below, in the storage API's shape (unexpected errors: 500, logged). */
function sendError(request: FastifyRequest, reply: FastifyReply, error: unknown): FastifyReply {
  let refusal: StorageApiError;
  if (error instanceof StorageApiError) refusal = error;
  else if (error instanceof DataApiError) refusal = error.status === 401 ? storageErrors.invalidJwt(error.message) : new StorageApiError(error.status, 'InvalidRequest', error.message);
  else if (error instanceof FileNotFoundInStoreError) refusal = storageErrors.noSuchKey();
  else if ((error as { code?: string } | null)?.code?.startsWith('FST_')) refusal = storageErrors.invalidRequest(`Malformed upload: ${(error as Error).message}`);
  else {
    request.log.error({ err: error }, 'storage request failed');
    refusal = new StorageApiError(500, 'InternalError', 'Internal server error');
  }
  return reply.status(refusal.status).type('application/json; charset=utf-8').send(JSON.stringify(refusal.body));
}

async function readSmallJson(stream: Readable, limit: number): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    size += (chunk as Buffer).length;
    if (size > limit) throw storageErrors.invalidRequest('The request body is too large');
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw storageErrors.invalidRequest('The body must be JSON: { "prefixes": ["<path>", …] }');
  }
}

export const dataApiStorageRoutes: FastifyPluginAsync<AppDeps & DataApiDeps> = async (app, deps) => {
  const identities = deps.dataApiIdentity;
  const store = createObjectStore(deps.config);
  const maxBytes = deps.config.STORAGE_MAX_UPLOAD_BYTES;
  const storage = { db: deps.db, store };
  const identityOf = (request: FastifyRequest): Promise<StorageIdentity> => identities.resolve(request);

  await app.register(async (scope) => {
    // Bodies are the object's bytes, whatever their type (a JSON file too): handed over as the raw
    // stream, except multipart forms, which the parser splits into fields and the file.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
    await scope.register(multipart, {
      // One byte over the cap, so the cap itself (not the parser's silent truncation) refuses.
      limits: { fileSize: maxBytes + 1, files: 1, fields: 10, fieldSize: 64 * 1024, parts: 12, headerPairs: 100 },
      throwFileSizeLimit: false,
    });
    await scope.register(cors, {
      origin: '*',
      methods: ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS'],
      allowedHeaders: ['authorization', 'apikey', 'content-type', 'cache-control', 'x-upsert', 'x-metadata', 'x-client-info', 'range', 'if-none-match'],
      exposedHeaders: ['content-length', 'content-range', 'accept-ranges', 'etag', 'cache-control'],
      maxAge: 600,
    });

    // Anything else of the storage protocol (list, move, copy, signed URLs, private downloads, buckets)
    // is outside the subset: a 400 that names it, never a wrong answer (CONTRACTS.md). Not a route,
    // so it adds no address of its own.
    scope.setNotFoundHandler((request, reply) => sendError(request, reply, unsupported(request)));

    scope.route<{ Params: { bucket: string; '*': string } }>({
      method: ['GET', 'HEAD'],
      url: '/object/public/:bucket/*',
      exposeHeadRoute: false,
      schema: { hide: true },
      handler: async (request, reply) => {
        try {
          const object = await findPublicObject(deps.db, request.params.bucket, request.params['*']);
          const etag = `"${object.sha256}"`;
          const range = parseRange(request.headers.range, object.size);
          if (range.kind === 'unsatisfiable') {
            return reply.status(416).header('content-range', unsatisfiedRange(object.size)).type('application/json; charset=utf-8')
              .send(JSON.stringify(new StorageApiError(416, 'InvalidRange', 'invalid range provided', 'invalid_range').body));
          }
          const span = range.kind === 'partial' ? { start: range.start, end: range.end } : undefined;
          const body = request.method === 'HEAD' ? undefined : await store.get(object.storage_key, span);
          reply.headers({
            'content-type': object.content_type,
            'cache-control': object.cache_control,
            etag,
            'last-modified': object.updated_at.toUTCString(),
            'accept-ranges': 'bytes',
            'content-length': String(span ? span.end - span.start + 1 : object.size),
          });
          if (span) reply.code(206).header('content-range', contentRange(span.start, span.end, object.size));
          return reply.send(body);
        } catch (error) {
          return sendError(request, reply, error);
        }
      },
    });

    scope.route<{ Params: { bucket: string; '*': string } }>({
      method: ['POST', 'PUT'],
      url: '/object/:bucket/*',
      schema: { hide: true },
      handler: async (request, reply) => {
        try {
          if (OPERATIONS.has(request.params.bucket)) throw unsupported(request);
          const identity = await identityOf(request);
          const base = {
            identity, bucket: request.params.bucket, name: request.params['*'], maxBytes,
            mode: request.method === 'PUT' ? 'update' as const : 'create' as const,
            upsert: String(request.headers['x-upsert'] ?? '').toLowerCase() === 'true',
          };
          if (request.isMultipart()) {
            const fields: Record<string, string> = {};
            for await (const part of request.parts()) {
              if (part.type === 'field') {
                if (typeof part.value === 'string') fields[part.fieldname] = part.value;
                continue;
              }
              // The first file part is the object (supabase-js names it ""); the form ends there.
              const file = part;
              return reply.send(await putObject(storage, { ...base, contentType: file.mimetype, cacheControl: fields.cacheControl }, async () => file.file));
            }
            throw storageErrors.invalidRequest('No content provided: send the file as a part of the form');
          }
          const declared = Number(request.headers['content-length']);
          if (Number.isFinite(declared) && declared > maxBytes) throw storageErrors.tooLarge(maxBytes);
          const raw = request.body as Readable | undefined;
          if (!raw) throw storageErrors.invalidRequest('No content provided');
          const cacheControl = typeof request.headers['cache-control'] === 'string' ? request.headers['cache-control'] : undefined;
          return reply.send(await putObject(storage, { ...base, contentType: request.headers['content-type'], cacheControl }, async () => raw));
        } catch (error) {
          return sendError(request, reply, error);
        }
      },
    });

    scope.route<{ Params: { bucket: string } }>({
      method: 'DELETE',
      url: '/object/:bucket',
      schema: { hide: true },
      handler: async (request, reply) => {
        try {
          const identity = await identityOf(request);
          const raw = request.body as Readable | undefined;
          const parsed = removeBody.safeParse(raw ? await readSmallJson(raw, REMOVE_BODY_LIMIT) : undefined);
          if (!parsed.success) throw storageErrors.invalidRequest('The body must be { "prefixes": ["<path>", …] } with 1 to 1000 paths');
          return reply.send(await removeObjects(storage, { identity, bucket: request.params.bucket, prefixes: parsed.data.prefixes }));
        } catch (error) {
          return sendError(request, reply, error);
        }
      },
    });
  }, { prefix: '/storage/v1' });
};
