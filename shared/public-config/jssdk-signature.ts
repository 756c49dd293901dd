import { createHash, randomBytes } from 'node:crypto';
import { findClientWithApp } from '../credentials/oauth/repository.js';
import type { Database } from '../db/client.js';
import { AppError } from '../errors.js';
import { ACCOUNT_CREDENTIAL_ERRCODES } from '../payment-channels/chan-a/open-platform.js';
import { openOfficialAccount, type OpenedOfficialAccount } from '../hardware-sales/official-accounts.js';
import { SealedSecretError, SecretsKeyMissingError, type SecretKeyRing } from '../secrets/key-ring.js';

// The chan_a JS-SDK signature (spec §4.10, §7.6; protocols.md "chan_a"): which page URLs may be
// signed for an official account, the signature, and the jsapi_ticket it needs, cached per AppID.
// The security boundary is the account's safe-domain list: a signature lets a page call the
// account's JS APIs, so only pages on the hosts the operator listed get one.

export const jssdkApis = ['openAddress', 'chooseWXPay'] as const;
export type JssdkApi = (typeof jssdkApis)[number];
const DEFAULT_APIS: JssdkApi[] = ['openAddress'];

export const invalidJssdkRequest = (message: string) => new AppError(400, 'INVALID_REQUEST', message);
// One answer for every kind of "no usable account", so an anonymous caller learns nothing more.
export const jssdkNotConfigured = () => new AppError(503, 'NOT_CONFIGURED', 'The JS-SDK is not configured for this client');
const upstreamFailed = () => new AppError(500, 'INTERNAL_ERROR', 'The JS-SDK signature could not be made now; try again later');

export const withoutFragment = (url: string): string => url.split('#', 1)[0]!;

/** Lowercase hex sha1 of `jsapi_ticket=…&noncestr=…&timestamp=…&url=…` (keys in that order, values raw). */
export function jssdkSignature(input: { ticket: string; nonceStr: string; timestamp: number; url: string }): string {
  const text = `jsapi_ticket=${input.ticket}&noncestr=${input.nonceStr}&timestamp=${input.timestamp}&url=${withoutFragment(input.url)}`;
  return createHash('sha1').update(text, 'utf8').digest('hex');
}

/** 32 hex characters from the CSPRNG (the channel takes up to 32). */
export const jssdkNonce = (): string => randomBytes(16).toString('hex');

export interface PageToSign {
  /** Exactly what is signed: the given URL up to its first `#`. */
  signedUrl: string;
  /** Lower case (and punycode), as the URL parser gives it. */
  host: string;
  jsApiList: JssdkApi[];
}

// What `location.href` gives: printable ASCII, no space or backslash. Anything else would be parsed
// here one way and compared by the channel another.
const HREF_CHARS = /^[!-[\]-~]+$/;

/**
 * The checks that need no account: `url` is an https page URL on the default port with no
 * credentials, `Origin` (when the browser sent one) is that page's origin, `apis` names only
 * whitelisted APIs (comma list; blanks ignored, repeats dropped; none means `openAddress`).
 */
export function checkPageToSign(input: { url: string; apis?: string | undefined; origin?: string | undefined }): PageToSign {
  const signedUrl = withoutFragment(input.url);
  if (!HREF_CHARS.test(signedUrl)) throw invalidJssdkRequest('url must be the page address as location.href gives it (printable ASCII, no spaces)');
  let page: URL;
  try {
    page = new URL(signedUrl);
  } catch {
    throw invalidJssdkRequest('url is not an absolute URL');
  }
  if (page.protocol !== 'https:') throw invalidJssdkRequest('url must be https');
  if (page.username || page.password) throw invalidJssdkRequest('url must not carry credentials');
  // Safe domains are host names: a page on another port may be another service on the same host.
  if (page.port !== '') throw invalidJssdkRequest('url must use the default https port');
  if (input.origin !== undefined && input.origin !== page.origin) throw invalidJssdkRequest('Origin does not match the origin of url');
  return { signedUrl, host: page.hostname, jsApiList: parseJssdkApis(input.apis) };
}

export function parseJssdkApis(text: string | undefined): JssdkApi[] {
  const names = (text ?? '').split(',').map((name) => name.trim()).filter(Boolean);
  const unknown = names.find((name) => !(jssdkApis as readonly string[]).includes(name));
  if (unknown !== undefined) throw invalidJssdkRequest(`apis: '${unknown.slice(0, 50)}' is not allowed (allowed: ${jssdkApis.join(', ')})`);
  return names.length === 0 ? [...DEFAULT_APIS] : [...new Set(names as JssdkApi[])];
}

/** The host must be one of the safe domains exactly: a listed domain does not cover its subdomains. */
export function assertSafeHost(host: string, safeDomains: readonly string[]): void {
  if (!safeDomains.includes(host)) throw invalidJssdkRequest(`url host ${host} is not a JS-SDK safe domain of this client`);
}

/**
 * The official account of `clientId`, or 503 `NOT_CONFIGURED` when there is none, the OAuth app is
 * disabled or deleted, or the sealed AppSecret no longer opens (SECRETS_KEY changed).
 */
export async function jssdkAccountOf(deps: { db: Database; secrets: SecretKeyRing }, clientId: string): Promise<OpenedOfficialAccount> {
  const client = await findClientWithApp(deps.db, clientId);
  if (!client || client.disabled_at || client.deleted_at) throw jssdkNotConfigured();
  let account: OpenedOfficialAccount | null;
  try {
    account = await openOfficialAccount(deps, clientId);
  } catch (error) {
    if (error instanceof SealedSecretError || error instanceof SecretsKeyMissingError) throw jssdkNotConfigured();
    throw error;
  }
  if (!account) throw jssdkNotConfigured();
  return account;
}

// ---------------------------------------------------------------------------------------------
// The jsapi_ticket, cached per AppID

/** Why a channel call failed, for the log: never the AppSecret or an access token. */
export interface JssdkUpstreamFault {
  appId: string;
  call: 'token' | 'ticket';
  status?: number;
  errcode?: number;
  errmsg?: string;
  error?: string;
}

export interface JsapiTicketCacheOptions {
  /** `CHAN_A_OPEN_BASE_URL`. */
  openBaseUrl: string;
  onFault?: (fault: JssdkUpstreamFault) => void;
  /** Milliseconds since the epoch (tests move it). */
  now?: () => number;
  timeoutMs?: number;
}

/** The channel's documented lifetime of both the access token and the ticket; longer answers are capped. */
const MAX_LIFETIME_SECONDS = 7200;
/** The ticket call's errcodes that blame the access token: get a new one and ask once more. */
const ACCESS_TOKEN_ERRCODES = new Set([40001, 40014, 42001]);
const DEFAULT_TIMEOUT_MS = 10_000;

/**
 * Milliseconds to keep a value the channel says lives `expiresIn` seconds: a tenth of its life
 * (at most 5 minutes) early, so no request signs with a ticket about to lapse.
 */
export function keepMillis(expiresIn: unknown): number {
  const lifetime = typeof expiresIn === 'number' && Number.isFinite(expiresIn) && expiresIn > 0
    ? Math.min(expiresIn, MAX_LIFETIME_SECONDS) : MAX_LIFETIME_SECONDS;
  return Math.floor((lifetime - Math.min(300, lifetime / 10)) * 1000);
}

/** One cached value with its refresh time, and the one refresh under way that every caller shares. */
class Lease {
  private current: { value: string; refreshAt: number } | null = null;
  private pending: Promise<string> | null = null;

  constructor(private readonly now: () => number) {}

  get(load: () => Promise<{ value: string; expiresIn: unknown }>): Promise<string> {
    if (this.current && this.now() < this.current.refreshAt) return Promise.resolve(this.current.value);
    if (!this.pending) {
      // A failed load leaves nothing behind: the next caller tries again.
      const pending: Promise<string> = load()
        .then(({ value, expiresIn }) => {
          this.current = { value, refreshAt: this.now() + keepMillis(expiresIn) };
          return value;
        })
        .finally(() => {
          if (this.pending === pending) this.pending = null;
        });
      this.pending = pending;
    }
    return this.pending;
  }

  /** Forgets `value` (the channel refused it), unless a newer one already replaced it. */
  forget(value: string): void {
    if (this.current?.value === value) this.current = null;
  }
}

type Json = Record<string, unknown>;

/**
 * The jsapi_ticket of each AppID and the access token it is fetched with, cached for their life
 * (one per process). Concurrent callers share one refresh; an access token the ticket call refuses
 * is replaced once. A channel failure is 500 `INTERNAL_ERROR` with a fixed message (the detail goes
 * to `onFault`); a token call refusing the AppID or AppSecret is 503 `NOT_CONFIGURED`.
 */
export class JsapiTicketCache {
  private readonly tickets = new Map<string, Lease>();
  private readonly tokens = new Map<string, Lease>();
  private readonly now: () => number;
  private readonly timeoutMs: number;

  constructor(private readonly options: JsapiTicketCacheOptions) {
    this.now = options.now ?? Date.now;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /** The ticket of `account.appId`; `fetchImpl` makes the channel calls (the SSRF-guarded fetch). */
  ticket(account: { appId: string; appSecret: string }, fetchImpl: typeof fetch): Promise<string> {
    return this.leaseOf(this.tickets, account.appId).get(() => this.fetchTicket(account, fetchImpl));
  }

  private leaseOf(map: Map<string, Lease>, key: string): Lease {
    let lease = map.get(key);
    if (!lease) {
      lease = new Lease(this.now);
      map.set(key, lease);
    }
    return lease;
  }

  private async fetchTicket(account: { appId: string; appSecret: string }, fetchImpl: typeof fetch) {
    // A token is only good with the secret it was fetched with: a re-set account gets its own.
    const tokens = this.leaseOf(this.tokens, `${account.appId}:${createHash('sha256').update(account.appSecret).digest('hex')}`);
    const token = () => tokens.get(() => this.fetchToken(account, fetchImpl));
    const ask = (accessToken: string) => {
      const url = new URL(`${this.options.openBaseUrl.replace(/\/+$/, '')}/cgi-bin/ticket/getticket`);
      url.searchParams.set('access_token', accessToken);
      url.searchParams.set('type', 'jsapi');
      return this.call(fetchImpl, url, { appId: account.appId, call: 'ticket' }, [accessToken]);
    };
    const first = await token();
    let answer = await ask(first);
    if (ACCESS_TOKEN_ERRCODES.has(errcodeOf(answer))) {
      tokens.forget(first);
      answer = await ask(await token());
    }
    const errcode = errcodeOf(answer);
    if (errcode !== 0 || typeof answer.ticket !== 'string' || answer.ticket === '') {
      throw this.fault({ appId: account.appId, call: 'ticket', errcode, errmsg: errmsgOf(answer) });
    }
    return { value: answer.ticket, expiresIn: answer.expires_in };
  }

  private async fetchToken(account: { appId: string; appSecret: string }, fetchImpl: typeof fetch) {
    const url = new URL(`${this.options.openBaseUrl.replace(/\/+$/, '')}/cgi-bin/token`);
    url.searchParams.set('grant_type', 'client_credential');
    url.searchParams.set('appid', account.appId);
    url.searchParams.set('secret', account.appSecret);
    const answer = await this.call(fetchImpl, url, { appId: account.appId, call: 'token' }, [account.appSecret]);
    const errcode = errcodeOf(answer);
    if (errcode !== 0 || typeof answer.access_token !== 'string' || answer.access_token === '') {
      const error = this.fault({ appId: account.appId, call: 'token', errcode, errmsg: errmsgOf(answer) });
      throw ACCOUNT_CREDENTIAL_ERRCODES.has(errcode) ? jssdkNotConfigured() : error;
    }
    return { value: answer.access_token, expiresIn: answer.expires_in };
  }

  /** GET `url` → its JSON object; anything else (network, timeout, non-2xx, not JSON) is a fault. */
  private async call(fetchImpl: typeof fetch, url: URL, where: Pick<JssdkUpstreamFault, 'appId' | 'call'>, secrets: string[]): Promise<Json> {
    let response: Response;
    let text: string;
    try {
      response = await fetchImpl(url.href, { method: 'GET', headers: { Accept: 'application/json' }, signal: AbortSignal.timeout(this.timeoutMs) });
      text = await response.text();
    } catch (error) {
      // The URL holds the AppSecret or the access token: an error quoting it is redacted.
      const detail = `${(error as Error).name}: ${(error as Error).message}`;
      throw this.fault({ ...where, error: secrets.reduce((message, secret) => message.split(secret).join('***'), detail) });
    }
    if (!response.ok) throw this.fault({ ...where, status: response.status });
    try {
      const body = JSON.parse(text) as unknown;
      if (typeof body === 'object' && body !== null && !Array.isArray(body)) return body as Json;
    } catch {
      // reported below
    }
    throw this.fault({ ...where, status: response.status, error: 'not a JSON object' });
  }

  private fault(fault: JssdkUpstreamFault): AppError {
    this.options.onFault?.(fault);
    return upstreamFailed();
  }
}

const errcodeOf = (answer: Json): number => (typeof answer.errcode === 'number' ? answer.errcode : 0);
const errmsgOf = (answer: Json): string | undefined => (typeof answer.errmsg === 'string' ? answer.errmsg.slice(0, 200) : undefined);
