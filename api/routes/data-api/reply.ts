import type { FastifyReply, FastifyRequest } from 'fastify';
import { DataApiError } from '../../../shared/data-api/errors.js';
import type { DataApiRequest, DataApiResponse } from '../../../shared/data-api/service.js';

/** The request as the engine reads it: the raw query string (order and repeated keys matter) and the raw JSON body. */
export function dataApiRequest(request: FastifyRequest): DataApiRequest {
  const url = request.raw.url ?? '';
  const at = url.indexOf('?');
  const raw = request.body as string | undefined;
  let body: unknown;
  if (typeof raw === 'string' && raw.trim() !== '') {
    try {
      body = JSON.parse(raw);
    } catch (error) {
      throw new DataApiError(400, 'PGRST102', 'Empty or invalid json', (error as Error).message);
    }
  }
  return { method: request.method, headers: request.headers, query: new URLSearchParams(at < 0 ? '' : url.slice(at + 1)), body };
}

/** Sends the engine's answer, or its refusal in PostgREST's shape (anything unexpected: 500, logged). */
export async function answer(request: FastifyRequest, reply: FastifyReply, work: () => Promise<DataApiResponse>): Promise<FastifyReply> {
  try {
    const response = await work();
    reply.status(response.status).headers(response.headers);
    return response.body === null ? reply.send() : reply.send(response.body);
  } catch (error) {
    if (error instanceof DataApiError) {
      return reply.status(error.status).headers(error.headers).type('application/json; charset=utf-8').send(JSON.stringify(error.body));
    }
    request.log.error({ err: error }, 'data API request failed');
    return reply.status(500).type('application/json; charset=utf-8')
      .send(JSON.stringify({ code: 'PGRST000', message: 'Internal error', details: null, hint: null }));
  }
}
