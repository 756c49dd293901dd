import multipart from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { z } from 'zod';
import { AppError } from '../../../shared/errors.js';
import { createFileStore, type FileStore } from '../../../shared/storage/file-store.js';
import {
  fileTooLarge, recordUpload, requireUploadProject, storeUploadBytes, type StorageCaller,
} from '../../../shared/storage/service.js';
import type { AppDeps } from '../../deps.js';
import { principalOf } from '../../plugins/auth.js';
import { objectStoreRoutes } from './objects.js';

/** The one file field of an upload. */
export const UPLOAD_FIELD = 'file';

function callerOf(request: FastifyRequest): StorageCaller {
  const principal = principalOf(request, 'jwt', 'api-key');
  return principal.kind === 'jwt'
    ? { kind: 'jwt', userId: principal.userId }
    : { kind: 'api-key', userId: principal.userId, teamId: principal.teamId, apiKeyId: principal.apiKeyId };
}

const fileRequired = (message = `Send the file as multipart/form-data in the field "${UPLOAD_FIELD}"`) =>
  new AppError(400, 'file_required', message);

/** The multipart parser's errors in our envelope; anything else is passed on unchanged. */
function multipartProblem(error: unknown, maxBytes: number): unknown {
  if (error instanceof AppError) return error;
  const code = (error as { code?: string } | null)?.code;
  switch (code) {
    case 'FST_REQ_FILE_TOO_LARGE': return fileTooLarge(maxBytes);
    case 'FST_FILES_LIMIT': return new AppError(400, 'too_many_files', `Send exactly one file, in the field "${UPLOAD_FIELD}"`);
    case 'FST_PARTS_LIMIT':
    case 'FST_FIELDS_LIMIT': return new AppError(400, 'too_many_parts', 'The form has too many parts');
    case 'FST_PROTO_VIOLATION': return new AppError(400, 'invalid_multipart', 'A form field name is not allowed');
    case 'FST_INVALID_JSON_FIELD_ERROR': return new AppError(400, 'invalid_multipart', 'A JSON form field is malformed');
  }
  const message = (error as Error | null)?.message ?? '';
  // Malformed bodies as busboy reports them (missing boundary, early end, bad headers).
  if (/multipart|boundary|unexpected end|part terminated|malformed/i.test(message)) {
    return new AppError(400, 'invalid_multipart', `Malformed multipart body: ${message}`);
  }
  return error;
}

const discard = () => new Writable({ write: (_chunk, _encoding, done) => done() });

export interface StorageRouteOptions extends AppDeps {
  /** Defaults to the local-disk store under `DATA_DIR/files`. */
  fileStore?: FileStore;
}

/**
 * Uploads (slug `storage`). `@fastify/multipart` is registered here, so only this plugin's routes
 * parse multipart bodies. The size cap is `STORAGE_MAX_UPLOAD_BYTES` (default 50 MiB).
 */
export const storageRoutes: FastifyPluginAsyncZod<StorageRouteOptions> = async (app, deps) => {
  const { db, config } = deps;
  const store = deps.fileStore ?? createFileStore(config);
  const maxBytes = config.STORAGE_MAX_UPLOAD_BYTES;
  await app.register(multipart, {
    // One byte over the cap so that a file of exactly the cap is accepted and one byte more is not.
    limits: { fileSize: maxBytes + 1, files: 1, fields: 20, fieldSize: 64 * 1024, parts: 30, headerPairs: 100 },
    throwFileSizeLimit: false,
  });

  app.post('/storage/:projectId/upload', {
    config: { access: 'combined' },
    schema: {
      tags: ['storage'],
      summary: `Upload one file (multipart/form-data, field "${UPLOAD_FIELD}") into a project; returns its handle`,
      description: `At most ${maxBytes} bytes (413 file_too_large above). Use the handle (wf-file:<id>) as a run input.`,
      consumes: ['multipart/form-data'],
      params: z.object({ projectId: z.uuid() }),
      response: {
        201: z.object({
          fileId: z.string(), handle: z.string().describe('wf-file:<fileId>'), size: z.number().int(), contentType: z.string(),
          sha256: z.string(), originalName: z.string().nullable(),
        }),
      },
    },
  }, async (request, reply) => {
    const caller = callerOf(request);
    const project = await requireUploadProject(db, caller, request.params.projectId);
    if (!request.isMultipart()) throw fileRequired();

    let stored: Awaited<ReturnType<typeof storeUploadBytes>> | null = null;
    let file: { contentType: string; originalName: string | undefined } | null = null;
    let otherField: string | null = null;
    try {
      for await (const part of request.parts()) {
        if (part.type !== 'file') continue;
        if (part.fieldname !== UPLOAD_FIELD) {
          // Read it to the end (the parser needs that to go on), keep nothing.
          await pipeline(part.file, discard());
          otherField = part.fieldname;
          continue;
        }
        const parsed = part.file;
        stored = await storeUploadBytes(store, { stream: parsed, truncated: () => parsed.truncated, maxBytes });
        file = { contentType: part.mimetype, originalName: part.filename };
      }
      if (!stored || !file) {
        throw otherField === null ? fileRequired() : fileRequired(`The file must be sent in the field "${UPLOAD_FIELD}", not "${otherField}"`);
      }
    } catch (error) {
      if (stored) await store.delete(stored.storageKey);
      throw multipartProblem(error, maxBytes);
    }
    const uploaded = await recordUpload(db, store, {
      caller, project, stored, contentType: file.contentType, originalName: file.originalName,
    });
    reply.code(201);
    return {
      fileId: uploaded.fileId, handle: uploaded.handle, size: uploaded.size, contentType: uploaded.contentType,
      sha256: uploaded.sha256, originalName: uploaded.originalName,
    };
  });
  await app.register(objectStoreRoutes, deps);
};
