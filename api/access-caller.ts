import type { FastifyRequest } from 'fastify';
import type { AccessCaller } from '../shared/access/service.js';
import { principalOf } from './plugins/auth.js';

/** The access caller (shared/access) of a route on the `combined` row: a JWT user or an API key. */
export function accessCallerOf(request: FastifyRequest): AccessCaller {
  const principal = principalOf(request, 'jwt', 'api-key');
  return principal.kind === 'jwt'
    ? { kind: 'jwt', userId: principal.userId }
    : { kind: 'api-key', userId: principal.userId, teamId: principal.teamId };
}
