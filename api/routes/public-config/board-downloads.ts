import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { Counter, Gauge } from 'prom-client';
import { z } from 'zod';
import { isDatabaseUnavailable } from '../../../shared/dependency-errors.js';
import type { Database } from '../../../shared/db/client.js';
import { AppError } from '../../../shared/errors.js';
import {
  BOARD_CHANNELS, BOARD_PLATFORMS, SHA256_HEX, boardAssetContentType, boardFileNameProblem, createBoardAssetLookup,
  downloadCacheSizeProblem, largestBoardAssetSize, type BoardAssetKind,
} from '../../../shared/public-config/board-assets.js';
import { contentRange, ifNoneMatchHits, requestedRange, unsatisfiedRange } from '../../../shared/storage/byte-ranges.js';
import { DownloadCache, downloadCacheDir } from '../../../shared/storage/download-cache.js';
import type { FileStore } from '../../../shared/storage/file-store.js';
import { PooledFileStream } from '../../../shared/storage/pooled-file-stream.js';
import { createObjectStore } from '../../../shared/storage/object-store.js';
import type { AppDeps } from '../../deps.js';
import { publicError } from '../../plugins/public-envelope.js';

const tags = ['public-config'];
const errorResponses = { 400: publicError, 404: publicError, 416: publicError, 502: publicError, 504: publicError };
const sha256Param = z.string().regex(SHA256_HEX, 'expected 64 lowercase hex characters');
const fileNameParam = z.string().describe('The registered file name; the extension must match the channel or platform');

const IMMUTABLE = 'public, max-age=31536000, immutable';

type ValidationFailure = Error & { validation?: Array<{ instancePath: string; message?: string }> };

const invalid = (message: string) => new AppError(400, 'INVALID_REQUEST', message);
const assetNotFound = () => new AppError(404, 'NOT_FOUND', 'No such file');

function rejectInvalidParams(request: FastifyRequest): void {
  const failure = request.validationError as ValidationFailure | undefined;
  if (!failure) return;
  const first = failure.validation?.[0];
  const field = first?.instancePath.split('/').filter(Boolean).join('.') || 'params';
  throw invalid(`${field === '*' ? 'fileName' : field}: ${first?.message ?? 'invalid'}`);
}

/**
 * The largest registered asset's size, or null during a database outage: the API still starts then
 * (and says so on /readyz), and a file too large for the cache fails its own download (500).
 */
async function largestAssetOrNull(app: FastifyInstance, db: Database): Promise<number | null> {
  try {
    return await largestBoardAssetSize(db);
  } catch (error) {
    if (!isDatabaseUnavailable(error)) throw error;
    app.log.warn({ err: error }, 'PostgreSQL is unavailable: the largest registered board asset was not checked against DOWNLOAD_CACHE_MAX_BYTES');
    return null;
  }
}

export interface BoardDownloadRouteOptions extends AppDeps {
  /** Defaults to the object store under OBJECT_STORE_DIR (a test passes one that reads a stalled FIFO). */
  objectStore?: FileStore;
}

/**
 * Board firmware and board app downloads (spec §4.10, §8.2): strict parameters (400), registered
 * assets only (404), served from the bounded content-addressed download cache with one byte range
 * at most (206/416), conditional GET (304), exact lengths, never chunked. The API refuses to start
 * when the cache cannot hold the upload limit or the largest registered asset.
 */
export const boardDownloadRoutes: FastifyPluginAsyncZod<BoardDownloadRouteOptions> = async (app, deps) => {
  const { db, config } = deps;
  const sizeProblem = downloadCacheSizeProblem(config, await largestAssetOrNull(app, db));
  if (sizeProblem) throw new Error(sizeProblem);
  const fills = new Counter({ name: 'board_download_cache_fills_total', help: 'Download cache fills by outcome', labelNames: ['outcome'] as const, registers: [app.metrics] });
  const cache = await DownloadCache.open({
    dir: downloadCacheDir(config),
    maxBytes: config.DOWNLOAD_CACHE_MAX_BYTES,
    stallTimeoutMs: config.DOWNLOAD_STALL_TIMEOUT_MS,
    store: deps.objectStore ?? createObjectStore(config),
    onFill: (outcome, object, error) => {
      fills.inc({ outcome });
      if (outcome !== 'filled') app.log.warn({ err: error, sha256: object.sha256, outcome }, 'download cache fill failed');
    },
  });
  new Gauge({ name: 'board_download_cache_bytes', help: 'Bytes held by the download cache', registers: [app.metrics], collect() { this.set(cache.totalBytes); } });
  const lookup = createBoardAssetLookup(db);

  async function serve(request: FastifyRequest, reply: FastifyReply, kind: BoardAssetKind, target: string, sha256: string, fileName: string) {
    rejectInvalidParams(request);
    const problem = boardFileNameProblem(kind, target, fileName);
    if (problem) throw invalid(`fileName: ${problem}`);
    const asset = await lookup({ kind, target, sha256, fileName });
    if (!asset) throw assetNotFound();

    const etag = `"${sha256}"`;
    const { headers } = request;
    if (ifNoneMatchHits(headers['if-none-match'], etag)) {
      return reply.code(304).header('etag', etag).header('cache-control', IMMUTABLE).send();
    }
    const { size } = asset;
    // Range is defined for GET only (RFC 9110 §14.2): HEAD describes the whole file.
    const range = request.method === 'GET' ? requestedRange(headers, size, etag) : { kind: 'full' as const };
    if (range.kind === 'unsatisfiable') {
      throw new AppError(416, 'RANGE_NOT_SATISFIABLE', 'Send one byte range within the file', {}, { 'content-range': unsatisfiedRange(size) });
    }
    const start = range.kind === 'partial' ? range.start : 0;
    const end = range.kind === 'partial' ? range.end : size - 1;

    // Only now, with nothing left to refuse, does the file enter the cache. HEAD waits for it too,
    // so that it answers what GET would (404, 502, 504 included).
    let fd: number | null = null;
    if (request.method === 'GET' && size > 0) fd = await cache.openFile(asset);
    else await cache.ensure(asset);
    reply.code(range.kind === 'partial' ? 206 : 200).headers({
      'content-type': boardAssetContentType(fileName),
      'content-length': String(end - start + 1),
      'content-disposition': `attachment; filename="${fileName}"`,
      'accept-ranges': 'bytes',
      'cache-control': IMMUTABLE,
      etag,
      'x-content-type-options': 'nosniff',
    });
    if (range.kind === 'partial') reply.header('content-range', contentRange(start, end, size));
    if (fd === null) return reply.send(request.method === 'GET' ? '' : undefined);
    // 1 MiB reads into reused buffers (the bench's GC finding: shared/storage/pooled-file-stream.ts).
    // Fastify destroys the stream (closing the descriptor) when the client goes away.
    return reply.send(new PooledFileStream(fd, start, end, reply.raw));
  }

  // The file name is the rest of the path (a wildcard), so a raw `/` in it reaches the handler and
  // is refused like `%2F`, instead of falling through to the router's 404. HEAD is declared, not
  // derived from GET, so it never opens the file.
  app.route({
    method: ['GET', 'HEAD'],
    url: '/board/firmware/:channel/:sha256/*',
    attachValidation: true,
    schema: {
      tags,
      summary: 'Download board firmware (.bin); one byte range at most',
      params: z.object({ channel: z.enum(BOARD_CHANNELS), sha256: sha256Param, '*': fileNameParam }),
      response: errorResponses,
    },
    handler: (request, reply) => serve(request, reply, 'board-firmware', request.params.channel, request.params.sha256, request.params['*']),
  });

  app.route({
    method: ['GET', 'HEAD'],
    url: '/board/app/:platform/:sha256/*',
    attachValidation: true,
    schema: {
      tags,
      summary: 'Download a board app installer; one byte range at most',
      description: 'macos-* take .dmg, .pkg or .zip; windows-x86_64 takes .exe or .msi.',
      params: z.object({ platform: z.enum(BOARD_PLATFORMS), sha256: sha256Param, '*': fileNameParam }),
      response: errorResponses,
    },
    handler: (request, reply) => serve(request, reply, 'board-app', request.params.platform, request.params.sha256, request.params['*']),
  });
};
