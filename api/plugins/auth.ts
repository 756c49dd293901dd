import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { accessMatrix, type AccessRule, type AccessRuleName } from '../../shared/credentials/access-matrix.js';
import { isGranted } from '../../shared/credentials/agent-permissions.js';
import type { Authenticator } from '../../shared/credentials/authenticate.js';
import { authMessages, type CredentialKind, type Principal, type PrincipalOf } from '../../shared/credentials/principal.js';
import { AppError } from '../../shared/errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The §5.3 row this route belongs to; routes without one are public. */
    access?: AccessRuleName;
  }
  interface FastifyRequest {
    principal: Principal | null;
  }
}

function presentedToken(request: FastifyRequest, rule: AccessRule): string | null {
  const header = request.headers.authorization;
  if (header !== undefined) {
    const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
    return match ? match[1]! : null;
  }
  const apiKey = request.headers['x-api-key'];
  if (rule.xApiKey && typeof apiKey === 'string' && apiKey.trim()) return apiKey.trim();
  return null;
}

/** Applies one §5.3 row to an authenticated principal: kind, OAuth scopes, agent grants. */
export function authorize(rule: AccessRule, principal: Principal, method: string, path: string): void {
  if (!rule.accept.includes(principal.kind)) {
    if (principal.kind === 'oauth' && rule.foreignOAuthScope && !principal.scopes.includes(rule.foreignOAuthScope)) {
      throw new AppError(403, authMessages.insufficientScope);
    }
    throw new AppError(rule.wrongKindStatus ?? 403, rule.wrongKindMessage);
  }
  if (principal.kind === 'oauth' && rule.oauthScopes?.some((scope) => !principal.scopes.includes(scope))) {
    throw new AppError(403, authMessages.insufficientScope);
  }
  if (principal.kind === 'agent' && rule.agentNeedsGrant && !isGranted(principal.permissions, method, path)) {
    throw new AppError(403, `Permission denied: ${method} ${path} is not granted to this agent`);
  }
}

/**
 * Resolves `Authorization: Bearer …` (or `X-API-Key` where the row allows it) into
 * `request.principal` for every route that names an access row, before its body is parsed.
 */
export const authPlugin = fp<{ authenticator: Authenticator }>(async (app, { authenticator }) => {
  app.decorateRequest('principal', null);
  app.addHook('onRequest', async (request) => {
    const ruleName = request.routeOptions.config.access;
    if (!ruleName) return;
    const rule: AccessRule = accessMatrix[ruleName];
    const token = presentedToken(request, rule);
    if (!token) throw new AppError(401, rule.unauthorizedMessage ?? authMessages.missing);
    const principal = await authenticator.authenticate(token).catch((error: unknown) => {
      if (rule.unauthorizedMessage && error instanceof AppError && error.status === 401) throw new AppError(401, rule.unauthorizedMessage);
      throw error;
    });
    authorize(rule, principal, request.method, request.url.split('?')[0]!);
    request.principal = principal;
  });
}, { name: 'auth' });

/** The principal of a route that declared `access`, narrowed to the kinds the handler handles. */
export function principalOf<K extends CredentialKind>(request: FastifyRequest, ...kinds: K[]): PrincipalOf<K> {
  const principal = request.principal;
  if (!principal || (kinds.length > 0 && !kinds.includes(principal.kind as K))) {
    throw new Error(`route ${request.routeOptions.url} reached its handler without an accepted principal`);
  }
  return principal as PrincipalOf<K>;
}
