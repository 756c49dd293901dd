import type { FastifyRequest } from 'fastify';
import type { RunCaller } from '../../../shared/app-runs/run-access.js';
import { accessMatrix } from '../../../shared/credentials/access-matrix.js';
import type { Authenticator } from '../../../shared/credentials/authenticate.js';
import type { PrincipalOf } from '../../../shared/credentials/principal.js';
import { AppError } from '../../../shared/errors.js';
import { authorize } from '../../plugins/auth.js';

/** Who calls the gateway: a credential the release gateway row accepts, or nobody. */
export type GatewayCaller = PrincipalOf<'api-key' | 'oauth' | 'agent'> | { kind: 'anonymous' };

/** Spec §4.1 rule 3: the presence of any of these, even empty or invalid, means "authenticate". */
const CREDENTIAL_HEADERS = ['authorization', 'x-api-key', 'x-internal-secret', 'x-internal-api-key-id'] as const;
/** Service-to-service headers of the spec's internal callers; this service has none, so they never authenticate. */
const INTERNAL_HEADERS = ['x-internal-secret', 'x-internal-api-key-id'] as const;

const unauthorized = () => new AppError(401, 'Unauthorized');

/** `Authorization: Bearer <token>`, else `X-API-Key: <token>`; null when neither holds a token. */
function presentedToken(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (header !== undefined) return /^Bearer[ ]+(\S+)\s*$/i.exec(header)?.[1] ?? null;
  const apiKey = request.headers['x-api-key'];
  return typeof apiKey === 'string' && apiKey.trim() ? apiKey.trim() : null;
}

/**
 * Spec §4.1 rules 1–3, decided after the endpoint is matched (the auth plugin runs before routing
 * knows the endpoint, so this route declares no access row and calls the authenticator itself).
 * With no credential header at all, the call is anonymous when `authRequired` is false, else 401.
 * With any credential header it must authenticate as a kind the gateway accepts, or 401/403.
 */
export async function authenticateGatewayCall(authenticator: Authenticator, request: FastifyRequest, path: string, authRequired: boolean): Promise<GatewayCaller> {
  const presented = CREDENTIAL_HEADERS.some((name) => request.headers[name] !== undefined);
  if (!presented) {
    if (authRequired) throw unauthorized();
    return { kind: 'anonymous' };
  }
  if (INTERNAL_HEADERS.some((name) => request.headers[name] !== undefined)) throw unauthorized();
  const token = presentedToken(request);
  if (!token) throw unauthorized();
  const principal = await authenticator.authenticate(token).catch((error: unknown) => {
    if (error instanceof AppError && error.status === 401) throw unauthorized();
    throw error;
  });
  authorize(accessMatrix.releaseGateway, principal, request.method, path);
  return principal as GatewayCaller;
}

/**
 * Rule 5, who pays: a caller's own valid key pays for itself (its team), an agent binding's team
 * for the agent, the deployment's team for an OAuth user (as on the run route); an anonymous call
 * is paid by the release's configured key, or refused 401 when the release has none.
 */
export async function runCallerOf(caller: GatewayCaller, releaseKey: () => Promise<PrincipalOf<'api-key'> | null>): Promise<RunCaller> {
  switch (caller.kind) {
    // Without a release key the run service refuses it: 403 on a private app first, else 401.
    case 'anonymous': return { kind: 'anonymous', payer: await releaseKey() };
    case 'agent':
      if (!caller.teamId) throw new AppError(403, 'Permission denied: this agent binding has no team to charge');
      return { kind: 'agent', bindingId: caller.bindingId, teamId: caller.teamId, userId: caller.userId };
    default:
      return caller;
  }
}

/** Spec §4.1 buckets: API key by key id, agent by binding id, OAuth and anonymous by release plus client IP. */
export function rateLimitBucket(releaseId: string, caller: GatewayCaller, clientIp: string): string {
  switch (caller.kind) {
    case 'api-key': return `release:${releaseId}:api-key:${caller.apiKeyId}`;
    case 'agent': return `release:${releaseId}:agent:${caller.bindingId}`;
    default: return `release:${releaseId}:ip:${clientIp}`;
  }
}
