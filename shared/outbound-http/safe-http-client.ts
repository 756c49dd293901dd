import http from 'node:http';
import https from 'node:https';
import zlib from 'node:zlib';
import { InvalidUrlError, SsrfBlockedError, pinnedLookup, vetUrl, type AllowRule, type ResolveFn, type VettedTarget } from './ssrf-guard.js';

// The HTTP client for requests that run on behalf of users (the `http` block today; connectors and
// payment channels next): every hop vetted by the SSRF guard and connected to the vetted address
// only, credentials dropped on a cross-origin redirect, the response capped in bytes (compressed
// and decompressed) and in time. Knows nothing of Temporal: callers map its errors.

export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;
export const DEFAULT_TIMEOUT_MS = 30_000;
export const MAX_REDIRECTS = 5;
const DEFAULT_USER_AGENT = 'workflow-app-service';

/** A failure of the request whose message is safe to show the caller; `type` names its kind (`HttpTimeout`, `ResponseTooLarge`, …). */
export class HttpRequestError extends Error {
  override readonly name = 'HttpRequestError';
  constructor(message: string, readonly type: string, readonly retryable: boolean) {
    super(message);
  }
}

export interface SafeHttpRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  /** A string is sent as is; null/undefined sends no body; anything else is sent as JSON. */
  body: unknown;
}

/** `body` is parsed JSON when the response says it is JSON, else text. */
export interface SafeHttpResponse { status: number; headers: Record<string, string>; body: unknown }

export interface SafeHttpOptions {
  rules: readonly AllowRule[];
  /** DNS resolution (default: node:dns lookup, all addresses). */
  resolve?: ResolveFn;
  timeoutMs?: number;
  maxResponseBytes?: number;
  /** Cancellation (e.g. an activity's cancellation signal); its reason is rethrown as is. */
  signal?: AbortSignal;
  /** Sent unless the request sets its own `user-agent`. */
  userAgent?: string;
}

// Headers the client computes itself; the caller cannot set them (Host stays the URL's host).
const DROPPED_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'te', 'trailer', 'proxy-connection']);
// Credentials that must not follow a redirect to another origin.
const CROSS_ORIGIN_STRIPPED = new Set(['authorization', 'cookie', 'proxy-authorization']);

function prepareHeaders(input: Record<string, string>, userAgent: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [rawName, rawValue] of Object.entries(input ?? {})) {
    const name = rawName.trim().toLowerCase();
    const value = String(rawValue);
    try {
      http.validateHeaderName(name);
      http.validateHeaderValue(name, value);
    } catch {
      throw new HttpRequestError(`Invalid request header ${JSON.stringify(rawName.slice(0, 100))}`, 'InvalidRequest', false);
    }
    if (!DROPPED_HEADERS.has(name)) headers[name] = value;
  }
  headers['user-agent'] ??= userAgent;
  headers['accept-encoding'] ??= 'gzip, deflate, br';
  return headers;
}

function encodeBody(body: unknown, headers: Record<string, string>): Buffer | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  const json = JSON.stringify(body);
  if (json === undefined) return undefined;
  headers['content-type'] ??= 'application/json';
  return Buffer.from(json, 'utf8');
}

function describeNetworkError(error: NodeJS.ErrnoException): { text: string; retryable: boolean } {
  const code = error.code ?? '';
  switch (code) {
    case 'ECONNREFUSED': return { text: 'connection refused', retryable: true };
    case 'ECONNRESET': return { text: 'connection reset', retryable: true };
    case 'EPIPE': return { text: 'connection closed', retryable: true };
    case 'ETIMEDOUT': return { text: 'connection timed out', retryable: true };
    case 'EHOSTUNREACH':
    case 'ENETUNREACH': return { text: 'host unreachable', retryable: true };
    case 'ENOTFOUND': return { text: 'host not found', retryable: false };
  }
  if (/CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code)) return { text: `TLS error (${code})`, retryable: false };
  if (code.startsWith('HPE_')) return { text: 'invalid HTTP response', retryable: true };
  // Never error.message: node's messages carry the connected address (e.g. "connect ECONNREFUSED 10.1.2.3:80").
  return { text: code ? `network error (${code})` : 'network error', retryable: true };
}

function send(target: VettedTarget, method: string, headers: Record<string, string>, body: Buffer | undefined, signal: AbortSignal): Promise<http.IncomingMessage> {
  const client = target.url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const request = client.request({
      protocol: target.url.protocol,
      hostname: target.hostname,
      port: target.port,
      path: `${target.url.pathname}${target.url.search}`,
      method,
      headers: body ? { ...headers, 'content-length': String(body.length) } : headers,
      // One connection per request: a pooled socket could belong to another (unvetted) resolution.
      agent: false,
      // Connect only to the addresses the guard checked; Host and SNI stay the URL's host name.
      lookup: pinnedLookup(target.addresses),
      signal,
    }, resolve);
    request.on('error', reject);
    request.end(body);
  });
}

async function readBody(response: http.IncomingMessage, max: number, origin: string): Promise<Buffer> {
  const tooLarge = () => new HttpRequestError(`Response body from ${origin} exceeds the ${max} byte limit`, 'ResponseTooLarge', false);
  const declared = Number(response.headers['content-length']);
  if (Number.isFinite(declared) && declared > max) {
    response.destroy();
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response) {
    size += (chunk as Buffer).length;
    if (size > max) {
      response.destroy();
      throw tooLarge();
    }
    chunks.push(chunk as Buffer);
  }
  const raw = Buffer.concat(chunks);
  if (raw.length === 0) return raw;
  const encoding = String(response.headers['content-encoding'] ?? '').trim().toLowerCase();
  const options = { maxOutputLength: max };
  try {
    if (encoding === 'gzip' || encoding === 'x-gzip') return zlib.gunzipSync(raw, options);
    if (encoding === 'deflate') return zlib.inflateSync(raw, options);
    if (encoding === 'br') return zlib.brotliDecompressSync(raw, options);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || error instanceof RangeError) throw tooLarge();
    throw new HttpRequestError(`Response body from ${origin} could not be decoded (${encoding})`, 'InvalidResponse', false);
  }
  return raw;
}

function decodeBody(raw: Buffer, contentType: string): unknown {
  const charset = /;\s*charset="?([^";\s]+)/i.exec(contentType)?.[1];
  let text: string;
  try {
    text = new TextDecoder(charset ?? 'utf-8').decode(raw);
  } catch {
    text = raw.toString('utf8');
  }
  const mediaType = contentType.split(';')[0]!.trim().toLowerCase();
  if (mediaType === 'application/json' || mediaType.endsWith('+json')) {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return text;
}

function flattenHeaders(headers: http.IncomingHttpHeaders): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return flat;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * One outbound request, guarded against SSRF at every hop: each URL (the given one and every
 * redirect, at most 5) is vetted by the guard and the connection goes to the vetted address.
 * Throws SsrfBlockedError, InvalidUrlError, HostResolutionError (ssrf-guard.ts) or HttpRequestError;
 * their messages are safe to show the caller. The signal's reason is rethrown as is.
 */
export async function performHttpRequest(input: SafeHttpRequest, options: SafeHttpOptions): Promise<SafeHttpResponse> {
  const max = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
  const aborted = () => {
    if (options.signal?.aborted) return options.signal.reason as unknown;
    return new HttpRequestError(`HTTP request timed out after ${timeoutMs / 1000} s`, 'HttpTimeout', true);
  };
  const abortPromise = new Promise<never>((_, reject) => {
    signal.addEventListener('abort', () => reject(aborted()), { once: true });
  });
  abortPromise.catch(() => {}); // only observed when raced

  let method: string = input.method;
  const headers = prepareHeaders(input.headers, options.userAgent ?? DEFAULT_USER_AGENT);
  let body = method === 'HEAD' ? undefined : encodeBody(input.body, headers);
  let next: string = input.url;
  let previous: URL | undefined;
  const userOrigin = (() => {
    try {
      return new URL(input.url).origin;
    } catch {
      return 'the URL';
    }
  })();

  for (let hop = 0; ; hop++) {
    let target: VettedTarget;
    try {
      target = await Promise.race([vetUrl(next, options.rules, { resolve: options.resolve, base: previous }), abortPromise]);
    } catch (error) {
      if (hop > 0 && error instanceof SsrfBlockedError) {
        // The redirect target came from the server, not the user: name only its class.
        throw new SsrfBlockedError(`Refused redirect ${hop} from ${previous!.origin}: its target is not allowed (${error.reason})`, error.reason);
      }
      if (hop > 0 && error instanceof InvalidUrlError) throw new InvalidUrlError(`Invalid redirect Location from ${previous!.origin}`);
      throw error;
    }

    let response: http.IncomingMessage;
    try {
      response = await send(target, method, headers, body, signal);
    } catch (error) {
      if (signal.aborted) throw aborted();
      const { text, retryable } = describeNetworkError(error as NodeJS.ErrnoException);
      const where = hop === 0 ? userOrigin : `${userOrigin} (after ${hop} redirect${hop > 1 ? 's' : ''})`;
      throw new HttpRequestError(`HTTP request to ${where} failed: ${text}`, 'HttpNetworkError', retryable);
    }

    const status = response.statusCode ?? 0;
    const location = response.headers.location;
    if (REDIRECTS.has(status) && location) {
      response.resume();
      response.destroy();
      if (hop >= MAX_REDIRECTS) {
        throw new HttpRequestError(`Too many redirects from ${userOrigin} (more than ${MAX_REDIRECTS})`, 'TooManyRedirects', false);
      }
      if (status === 303 ? method !== 'HEAD' : (status === 301 || status === 302) && method === 'POST') {
        method = 'GET';
        body = undefined;
        delete headers['content-type'];
      }
      previous = target.url;
      let nextOrigin: string | undefined;
      try {
        nextOrigin = new URL(location, previous).origin;
      } catch {
        nextOrigin = undefined; // vetUrl reports it
      }
      if (nextOrigin !== previous.origin) for (const name of CROSS_ORIGIN_STRIPPED) delete headers[name];
      next = location;
      continue;
    }

    let raw: Buffer;
    try {
      raw = method === 'HEAD' || status === 204 || status === 304 ? (response.resume(), Buffer.alloc(0)) : await readBody(response, max, userOrigin);
    } catch (error) {
      if (error instanceof HttpRequestError) throw error;
      if (signal.aborted) throw aborted();
      const { text, retryable } = describeNetworkError(error as NodeJS.ErrnoException);
      throw new HttpRequestError(`Reading the response from ${userOrigin} failed: ${text}`, 'HttpNetworkError', retryable);
    }
    return {
      status,
      headers: flattenHeaders(response.headers),
      body: decodeBody(raw, String(response.headers['content-type'] ?? '')),
    };
  }
}
