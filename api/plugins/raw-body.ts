import type { FastifyInstance } from 'fastify';

/**
 * Every body of this (encapsulated) scope as the Buffer received, whatever its type: signed
 * callbacks are verified over the bytes as sent, never over a re-serialisation.
 */
export function keepRawBody(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
}
