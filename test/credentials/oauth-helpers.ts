import { createHash, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { expect } from 'vitest';
import type { Database } from '../../shared/db/client.js';
import { createOAuthApp } from '../../shared/credentials/oauth/apps.js';
import { createUser } from '../../shared/identity/service.js';
import type { TestStack } from '../harness/stack.js';

export const OAUTH_TABLES = ['oauth_apps', 'oauth_clients', 'oauth_grants', 'oauth_codes', 'oauth_tokens'] as const;

/** Every row of every OAuth table, to prove a refused request changed nothing. */
export async function oauthSnapshot(db: Database): Promise<string> {
  const out: Record<string, unknown[]> = {};
  for (const table of OAUTH_TABLES) out[table] = (await sql`select * from ${sql.table(table)} order by 1`.execute(db)).rows;
  return JSON.stringify(out);
}

export async function expectUnchanged<T>(db: Database, action: () => Promise<T>): Promise<T> {
  const before = await oauthSnapshot(db);
  const result = await action();
  expect(await oauthSnapshot(db)).toBe(before);
  return result;
}

export const newVerifier = () => randomBytes(32).toString('base64url');
export const challengeOf = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

let counter = 0;
export async function newUser(db: Database, name = 'User') {
  counter += 1;
  return createUser(db, { email: `oauth-${Date.now()}-${counter}-${randomBytes(3).toString('hex')}@example.com`, name: `${name} ${counter}` });
}

export async function newApp(
  stack: TestStack,
  options: { ownerId?: string; redirectUri?: string; scopes?: string[]; reviewStatus?: 'private' | 'approved'; name?: string } = {},
) {
  const ownerId = options.ownerId ?? (await newUser(stack.db, 'Owner')).id;
  const redirectUri = options.redirectUri ?? 'http://127.0.0.1:8765/callback';
  const { appId, clientId } = await createOAuthApp(stack.db, {
    ownerId, name: options.name ?? 'Test App', reviewStatus: options.reviewStatus ?? 'approved',
    client: { platform: 'web', redirectUris: [redirectUri], scopes: options.scopes ?? ['profile:read', 'orders:checkout', 'mobile:full'] },
  });
  return { appId, clientId, ownerId, redirectUri };
}

export interface AuthorizeRequest { clientId: string; redirectUri: string; scope: string; state?: string; challenge?: string; method?: string; responseType?: string }

export function authorizeQuery(r: AuthorizeRequest): string {
  const q = new URLSearchParams({ response_type: r.responseType ?? 'code', client_id: r.clientId, redirect_uri: r.redirectUri, scope: r.scope });
  if (r.state !== undefined) q.set('state', r.state);
  if (r.challenge !== undefined) q.set('code_challenge', r.challenge);
  if (r.method !== undefined) q.set('code_challenge_method', r.method);
  return q.toString();
}

/** Reads the hidden fields of the consent form, as a browser would submit them. */
export function consentFormFields(html: string): Record<string, string> {
  const fields: Record<string, string> = {};
  const unescape = (v: string) => v.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&#96;/g, '`').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
  for (const match of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields[unescape(match[1]!)] = unescape(match[2]!);
  return fields;
}

/**
 * The browser part of the flow through `app.inject`: the consent page with the session cookie, then
 * the form POST. Returns the redirect Location (code and state, or an error).
 */
export async function approveViaInject(stack: TestStack, request: AuthorizeRequest, jwt: string, decision: 'approve' | 'deny' = 'approve') {
  const page = await stack.app.inject({ method: 'GET', url: `/oauth/authorize?${authorizeQuery(request)}`, headers: { cookie: `wf_session=${jwt}` } });
  expect(page.statusCode, page.body).toBe(200);
  expect(page.body).toContain('name="csrf_token"');
  const fields = { ...consentFormFields(page.body), decision };
  const res = await stack.app.inject({
    method: 'POST', url: '/oauth/authorize', headers: { cookie: `wf_session=${jwt}`, 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams(fields).toString(),
  });
  expect(res.statusCode, res.body).toBe(303);
  return new URL(res.headers.location as string);
}

/** A fresh code for `userId` (approved through the consent form). */
export async function obtainCode(stack: TestStack, app: { clientId: string; redirectUri: string }, userId: string, scope = 'profile:read') {
  const verifier = newVerifier();
  const jwt = await stack.deps.idp.issue(userId, 600);
  const location = await approveViaInject(stack, { clientId: app.clientId, redirectUri: app.redirectUri, scope, state: 's1', challenge: challengeOf(verifier), method: 'S256' }, jwt);
  const code = location.searchParams.get('code');
  expect(code, location.toString()).toBeTruthy();
  return { code: code!, verifier };
}

export async function tokenRequest(stack: TestStack, form: Record<string, string>) {
  return stack.app.inject({
    method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: new URLSearchParams(form).toString(),
  });
}

/** Code → tokens through the token endpoint. */
export async function obtainTokens(stack: TestStack, app: { clientId: string; redirectUri: string }, userId: string, scope = 'profile:read') {
  const { code, verifier } = await obtainCode(stack, app, userId, scope);
  const res = await tokenRequest(stack, { grant_type: 'authorization_code', client_id: app.clientId, code, redirect_uri: app.redirectUri, code_verifier: verifier });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { access_token: string; refresh_token: string; expires_in: number; scope: string };
}
