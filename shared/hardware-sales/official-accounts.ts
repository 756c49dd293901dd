import type { Database } from '../db/client.js';
import { AppError } from '../errors.js';
import { ACCOUNT_CREDENTIAL_ERRCODES } from '../payment-channels/chan-a/open-platform.js';
import type { SecretKeyRing } from '../secrets/key-ring.js';
import { findOfficialAccount, oauthClientExists, upsertOfficialAccount } from './official-accounts-repository.js';

// The chan_a official account an OAuth client id uses for in-app (JSAPI) pay and the JS-SDK
// signature (CONTRACTS.md `chan-a account set`). The AppSecret is sealed at rest with the client id
// and AppID as associated data: a sealed value copied to another row, or a row whose AppID was
// changed without re-sealing, does not open.

export interface OfficialAccount {
  clientId: string;
  appId: string;
  safeDomains: string[];
}

export interface OpenedOfficialAccount extends OfficialAccount {
  appSecret: string;
}

const sealContext = (clientId: string, appId: string) => `chan_a_official_accounts:${clientId}:${appId}`;

/** Host names (lower case, no scheme, port or path) of the account's JS-SDK safe domains. */
export function parseSafeDomains(text: string | undefined): string[] {
  if (text === undefined) return [];
  const domains = text.split(',').map((d) => d.trim().toLowerCase()).filter(Boolean);
  for (const domain of domains) {
    if (!/^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(domain)) {
      throw new AppError(400, 'INVALID_REQUEST', `'${domain}' is not a host name (no scheme, port or path)`);
    }
  }
  return [...new Set(domains)];
}

/** Creates or replaces the account of `clientId` (an existing OAuth client). Seals the secret first. */
export async function setOfficialAccount(
  deps: { db: Database; secrets: SecretKeyRing },
  input: { clientId: string; appId: string; appSecret: string; safeDomains: string[] },
): Promise<OfficialAccount> {
  if (!(await oauthClientExists(deps.db, input.clientId))) throw new AppError(404, 'not_found', `OAuth client ${input.clientId} not found`);
  // Throws SecretsKeyMissingError when no key can seal (production without SECRETS_KEY).
  const sealed = deps.secrets.seal(input.appSecret, sealContext(input.clientId, input.appId));
  await upsertOfficialAccount(deps.db, { clientId: input.clientId, appId: input.appId, appSecretSealed: sealed, safeDomains: input.safeDomains });
  return { clientId: input.clientId, appId: input.appId, safeDomains: input.safeDomains };
}

/** The account of `clientId` with its secret opened, or null when there is none. */
export async function openOfficialAccount(deps: { db: Database; secrets: SecretKeyRing }, clientId: string): Promise<OpenedOfficialAccount | null> {
  const row = await findOfficialAccount(deps.db, clientId);
  if (!row) return null;
  return {
    clientId: row.client_id, appId: row.app_id, safeDomains: row.safe_domains,
    appSecret: deps.secrets.open(row.app_secret_sealed, sealContext(row.client_id, row.app_id)),
  };
}

/** The code was refused (invalid, used or expired): the buyer must authorize again. */
export const chanAAuthFailed = (message = 'The chan_a authorization code is invalid or expired; authorize again') =>
  new AppError(401, 'CHAN_A_AUTH_FAILED', message);

const OAUTH_TIMEOUT_MS = 10_000;

/**
 * Exchanges a base web-authorization code for the payer's openid (`GET /sns/oauth2/access_token`,
 * protocols.md "chan_a"). An `errcode` about the code is 401 `CHAN_A_AUTH_FAILED`; one about our
 * AppID/secret is 503 `NOT_CONFIGURED`; no usable answer at all (unreachable, 5xx, not JSON) is 502
 * `CHANNEL_ERROR`. The access token is not kept: only the openid is needed.
 */
export async function exchangeAuthCode(
  fetchImpl: typeof fetch,
  openBaseUrl: string,
  account: { appId: string; appSecret: string },
  code: string,
): Promise<string> {
  const url = new URL(`${openBaseUrl}/sns/oauth2/access_token`);
  url.searchParams.set('appid', account.appId);
  url.searchParams.set('secret', account.appSecret);
  url.searchParams.set('code', code);
  url.searchParams.set('grant_type', 'authorization_code');
  let body: unknown;
  try {
    const response = await fetchImpl(url.href, { method: 'GET', headers: { Accept: 'application/json' }, signal: AbortSignal.timeout(OAUTH_TIMEOUT_MS) });
    const text = await response.text();
    if (response.status >= 500) throw new Error(`HTTP ${response.status}`);
    body = JSON.parse(text) as unknown;
  } catch (error) {
    // The message never carries the URL: it holds the AppSecret.
    throw new AppError(502, 'CHANNEL_ERROR', `chan_a authorization could not be checked: ${(error as Error).name}`);
  }
  const answer = typeof body === 'object' && body !== null ? body as Record<string, unknown> : {};
  const errcode = typeof answer.errcode === 'number' ? answer.errcode : 0;
  if (errcode !== 0) {
    if (ACCOUNT_CREDENTIAL_ERRCODES.has(errcode)) throw new AppError(503, 'NOT_CONFIGURED', 'The official account\'s AppID or AppSecret is not accepted by chan_a');
    throw chanAAuthFailed();
  }
  if (typeof answer.openid !== 'string' || answer.openid === '') throw chanAAuthFailed('chan_a answered the authorization without an openid');
  return answer.openid;
}
