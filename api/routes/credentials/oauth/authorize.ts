import formbody from '@fastify/formbody';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { approveAuthorization, checkAuthorizeRequest, type AuthorizeCheck } from '../../../../shared/credentials/oauth/authorize.js';
import { OAuthError } from '../../../../shared/credentials/oauth/errors.js';
import { consentCsrfToken, isValidConsentCsrfToken, mayAuthorizeApp, type AuthorizeParams } from '../../../../shared/credentials/oauth/rules.js';
import { findUserById } from '../../../../shared/identity/repository.js';
import type { AppDeps } from '../../../deps.js';
import { consentPage, errorPage, PAGE_HEADERS, signInPage } from './pages.js';

/** The browser session: the identity-provider JWT the frontend keeps after login. */
export const SESSION_COOKIE = 'wf_session';
const SESSION_MAX_AGE_SECONDS = 12 * 3600;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const param = z.string().max(2048).optional();
const authorizeQuery = z.object({
  response_type: param.describe('Must be `code`'),
  client_id: param,
  redirect_uri: param.describe('Exactly one of the client\'s registered redirect URIs'),
  scope: param.describe('Space-separated subset of the client\'s allowed scopes'),
  state: param,
  code_challenge: param.describe('BASE64URL(SHA256(code_verifier))'),
  code_challenge_method: param.describe('Must be `S256`'),
});
const consentBody = authorizeQuery.extend({
  csrf_token: param,
  decision: z.enum(['approve', 'deny']).optional(),
});
const signInBody = authorizeQuery.extend({ id_token: z.string().max(8192).optional() });

export function readCookie(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq !== -1 && part.slice(0, eq).trim() === name) {
      try {
        return decodeURIComponent(part.slice(eq + 1).trim());
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

function redirectTo(reply: FastifyReply, redirectUri: string, params: Record<string, string>, status: 302 | 303) {
  const url = new URL(redirectUri);
  for (const [key, value] of Object.entries(params)) if (value) url.searchParams.append(key, value);
  reply.header('cache-control', 'no-store');
  return reply.redirect(url.toString(), status);
}

function sendPage(reply: FastifyReply, status: number, html: string) {
  return reply.code(status).headers(PAGE_HEADERS).send(html);
}

/** Before the redirect URI is trusted, errors are shown here (HTML for browsers, JSON otherwise), never redirected. */
function sendFatal(request: FastifyRequest, reply: FastifyReply, check: { error: string; description: string }) {
  const accept = request.headers.accept ?? '';
  if (accept.includes('application/json') && !accept.includes('text/html')) {
    return reply.code(400).header('cache-control', 'no-store').send({ error: check.error, error_description: check.description });
  }
  return sendPage(reply, 400, errorPage(check));
}

const sendRedirectError = (reply: FastifyReply, check: Extract<AuthorizeCheck, { outcome: 'redirect' }>, status: 302 | 303) =>
  redirectTo(reply, check.redirectUri, { error: check.error, error_description: check.description, state: check.state }, status);

/** A form POST from another site (Origin or Fetch Metadata say so) is refused: consent and sign-in are same-origin only. */
function isCrossSite(request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  if (typeof site === 'string') return site !== 'same-origin' && site !== 'none';
  const origin = request.headers.origin;
  if (!origin) return false;
  try {
    return new URL(origin).host !== request.host;
  } catch {
    return true;
  }
}

/**
 * GET /oauth/authorize and its consent and sign-in forms (authorization code + PKCE S256 only).
 * docs/oauth.md describes the design.
 */
export const authorizeRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  await app.register(formbody);

  async function signedInUser(request: FastifyRequest): Promise<{ id: string; email: string; jwt: string } | null> {
    const jwt = readCookie(request, SESSION_COOKIE);
    if (!jwt || jwt.length > 8192) return null;
    const payload = await deps.idp.verify(jwt).catch(() => null);
    if (!payload || !UUID.test(payload.sub)) return null;
    const user = await findUserById(deps.db, payload.sub);
    return user ? { id: user.id, email: user.email, jwt } : null;
  }

  async function renderForUser(request: FastifyRequest, reply: FastifyReply, check: Extract<AuthorizeCheck, { outcome: 'ok' }>) {
    const user = await signedInUser(request);
    if (!user) return sendPage(reply, 200, signInPage({ appName: check.client.app_name, params: check.params }));
    if (!mayAuthorizeApp(check.client, user.id)) {
      return redirectTo(reply, check.params.redirect_uri, {
        error: 'access_denied', error_description: 'This app is private to its author until it is reviewed', state: check.params.state,
      }, 302);
    }
    const csrfToken = consentCsrfToken(user.jwt, user.id, check.params, Math.floor(Date.now() / 1000));
    return sendPage(reply, 200, consentPage({ appName: check.client.app_name, userEmail: user.email, scopes: check.scopes, params: check.params, csrfToken }));
  }

  app.get('/oauth/authorize', {
    schema: {
      tags: ['oauth'],
      summary: 'OAuth 2.0 authorization endpoint (code flow, PKCE S256 required)',
      description: 'Shows a sign-in form (no valid `wf_session` cookie) or the consent page. Errors before the redirect URI is '
        + 'validated are a 400 page (JSON when only JSON is accepted); later errors redirect with `error`.',
      querystring: authorizeQuery,
    },
  }, async (request, reply) => {
    const check = await checkAuthorizeRequest(deps.db, request.query);
    if (check.outcome === 'fatal') return sendFatal(request, reply, check);
    if (check.outcome === 'redirect') return sendRedirectError(reply, check, 302);
    return renderForUser(request, reply, check);
  });

  app.post('/oauth/authorize/sign-in', {
    schema: {
      tags: ['oauth'],
      summary: 'Sign-in form of the authorization page: an identity-provider JWT becomes the `wf_session` cookie',
      consumes: ['application/x-www-form-urlencoded'],
      body: signInBody,
    },
  }, async (request, reply) => {
    const { id_token: idToken, ...query } = request.body;
    const check = await checkAuthorizeRequest(deps.db, query);
    if (check.outcome === 'fatal') return sendFatal(request, reply, check);
    if (check.outcome === 'redirect') return sendRedirectError(reply, check, 303);
    if (isCrossSite(request)) return sendPage(reply, 403, errorPage({ error: 'access_denied', description: 'Cross-site sign-in is not allowed' }));
    const payload = idToken ? await deps.idp.verify(idToken.trim()).catch(() => null) : null;
    const user = payload && UUID.test(payload.sub) ? await findUserById(deps.db, payload.sub) : undefined;
    if (!idToken || !user) {
      return sendPage(reply, 401, signInPage({ appName: check.client.app_name, params: check.params, error: 'That token is not valid. Sign in again.' }));
    }
    const maxAge = Math.max(0, Math.min(SESSION_MAX_AGE_SECONDS, typeof payload?.exp === 'number' ? payload.exp - Math.floor(Date.now() / 1000) : SESSION_MAX_AGE_SECONDS));
    reply.header('set-cookie', `${SESSION_COOKIE}=${encodeURIComponent(idToken.trim())}; Max-Age=${maxAge}; Path=/; HttpOnly; Secure; SameSite=Lax`);
    const back = new URLSearchParams(Object.entries(check.params).filter(([, v]) => v) as Array<[string, string]>);
    reply.header('cache-control', 'no-store');
    return reply.redirect(`/oauth/authorize?${back.toString()}`, 303);
  });

  app.post('/oauth/authorize', {
    schema: {
      tags: ['oauth'],
      summary: 'Consent decision: approve (code and state sent to redirect_uri) or deny (`error=access_denied`)',
      consumes: ['application/x-www-form-urlencoded'],
      body: consentBody,
    },
  }, async (request, reply) => {
    const { csrf_token: csrfToken, decision, ...query } = request.body;
    const check = await checkAuthorizeRequest(deps.db, query);
    if (check.outcome === 'fatal') return sendFatal(request, reply, check);
    if (check.outcome === 'redirect') return sendRedirectError(reply, check, 303);
    const user = await signedInUser(request);
    if (!user) return sendPage(reply, 401, signInPage({ appName: check.client.app_name, params: check.params, error: 'Your session has ended. Sign in again.' }));
    const params: AuthorizeParams = check.params;
    if (isCrossSite(request) || !csrfToken || !isValidConsentCsrfToken(csrfToken, user.jwt, user.id, params, Math.floor(Date.now() / 1000))) {
      return sendPage(reply, 403, errorPage({ error: 'access_denied', description: 'The consent form has expired or was not sent from this page. Start again from the app.' }));
    }
    if (decision !== 'approve') {
      return redirectTo(reply, params.redirect_uri, { error: 'access_denied', error_description: 'The user denied the request', state: params.state }, 303);
    }
    try {
      const { code } = await approveAuthorization(deps.db, {
        client: check.client, userId: user.id, scopes: check.scopes, redirectUri: params.redirect_uri, codeChallenge: params.code_challenge,
      });
      return redirectTo(reply, params.redirect_uri, { code, state: params.state }, 303);
    } catch (error) {
      if (!(error instanceof OAuthError)) throw error;
      return redirectTo(reply, params.redirect_uri, { error: error.code, error_description: error.description, state: params.state }, 303);
    }
  });
};
