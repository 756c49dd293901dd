// One light probe of an IMAP account (connect, authenticate, STATUS INBOX, LOGOUT), with every
// failure reduced to the probe outcomes of CONTRACTS.md "Connectors".
import { isIP, type Socket } from 'node:net';
import type { ImapFlow } from 'imapflow';

export type ProbeErrorCode = 'credential_invalid' | 'upstream_rate_limited' | 'upstream_error' | 'gateway_unreachable' | 'gateway_timeout' | 'gateway_auth_failed';

export interface ImapCredentials { host: string; port: number; tls: boolean; username: string; password: string }

export type ProbeResult = { ok: true } | { ok: false; errorCode: ProbeErrorCode };

/** "No answer within 10 s" of the contract: the whole probe, not each step. */
export const IMAP_PROBE_TIMEOUT_MS = 10_000;

// Refused or reset connections and DNS failures: nothing usable answers at that address.
const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME', 'EAI_FAIL', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);
const TIMED_OUT = new Set(['CONNECT_TIMEOUT', 'GREETING_TIMEOUT', 'UPGRADE_TIMEOUT', 'ETIMEOUT', 'ETIMEDOUT']);

interface ImapFlowError {
  code?: string;
  /** Set by imapflow when the connection ended with a server BYE (its text, e.g. "Too many connections"). */
  reason?: string;
  responseStatus?: string;
  serverResponseCode?: string;
  authenticationFailed?: boolean;
}

/**
 * Maps an error thrown by imapflow (or Node's socket layer beneath it) to a probe outcome. Only the
 * server's explicit `NO [AUTHENTICATIONFAILED]` counts as a wrong credential: a refusal without that
 * code may be a server-side outage and must not mark the connection invalid.
 */
export function probeErrorCodeOf(error: unknown): ProbeErrorCode {
  const e = (typeof error === 'object' && error !== null ? error : {}) as ImapFlowError;
  const code = e.code ?? '';
  if (e.authenticationFailed && e.serverResponseCode === 'AUTHENTICATIONFAILED') return 'credential_invalid';
  // RFC 5530 LIMIT, imapflow's throttling error, and any server BYE (busy, too many connections).
  if (e.serverResponseCode === 'LIMIT' || code === 'ETHROTTLE' || e.responseStatus === 'BYE' || e.reason) return 'upstream_rate_limited';
  if (UNREACHABLE.has(code)) return 'gateway_unreachable';
  if (TIMED_OUT.has(code)) return 'gateway_timeout';
  return 'upstream_error';
}

class ProbeTimeout extends Error {
  readonly code = 'CONNECT_TIMEOUT';
}

/**
 * Calls `onNotImap` as soon as the server's first bytes cannot start an IMAP greeting (`* OK`,
 * `* PREAUTH`, `* BYE`). imapflow would wait for a greeting until its timeout, so a non-IMAP
 * service that keeps the connection open (an SMTP or HTTP port) would pass for a silent gateway.
 */
function watchFirstBytes(socket: Socket, onNotImap: () => void) {
  let head = '';
  const onData = (chunk: Buffer) => {
    head += chunk.toString('latin1');
    if (head.length < 2) return;
    socket.removeListener('data', onData);
    if (!head.startsWith('* ')) onNotImap();
  };
  socket.on('data', onData);
}

/**
 * Connects, authenticates and reads STATUS of INBOX; never throws for upstream trouble.
 * `connectAddress`: the address the SSRF guard vetted for `credentials.host`, connected to instead
 * of resolving the name again (a second lookup could answer another, unvetted address); the name
 * still serves TLS (SNI and the certificate check).
 */
/**
 * An imapflow client for an account. `connectAddress`: the address the SSRF guard vetted for
 * `credentials.host`, connected to instead of resolving the name again (a second lookup could
 * answer another, unvetted address); the name still serves TLS (SNI and the certificate check).
 */
export async function imapClientFor(credentials: ImapCredentials, options: { timeoutMs: number; connectAddress?: string }): Promise<ImapFlow> {
  const { timeoutMs } = options;
  // Loaded on the first use: imapflow, mailparser (mail.ts) and their MIME dependencies were ~10 MB
  // of a worker's memory at rest, which a worker or API without mail connectors never needs (issue 44).
  const { ImapFlow } = await import('imapflow');
  const pinned = options.connectAddress !== undefined && options.connectAddress !== credentials.host;
  const client = new ImapFlow({
    host: pinned ? options.connectAddress! : credentials.host,
    ...(pinned && !isIP(credentials.host) ? { servername: credentials.host } : {}),
    port: credentials.port,
    secure: credentials.tls,
    auth: { user: credentials.username, pass: credentials.password },
    // imapflow logs to the console by default, including the login exchange.
    logger: false,
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
  });
  // An 'error' event without a listener would crash the process; the awaited calls report it.
  client.on('error', () => undefined);
  return client;
}

/** Connects, authenticates and reads STATUS of INBOX; never throws for upstream trouble. */
export async function probeImapAccount(credentials: ImapCredentials, options: { timeoutMs?: number; connectAddress?: string } = {}): Promise<ProbeResult> {
  const timeoutMs = options.timeoutMs ?? IMAP_PROBE_TIMEOUT_MS;
  const client = await imapClientFor(credentials, { timeoutMs, connectAddress: options.connectAddress });
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ProbeTimeout(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  let spokeNonImap = false;
  const exchange = async () => {
    const connecting = client.connect();
    // imapflow assigns its socket synchronously inside connect() (no proxy is configured); the
    // property is not in its typings, so a future version without it only loses this early check.
    const socket = (client as unknown as { socket?: Socket | false | null }).socket;
    if (socket) watchFirstBytes(socket, () => { spokeNonImap = true; client.close(); });
    await connecting;
    // imapflow answers a refused or interrupted STATUS with `false` rather than an error.
    const status = await client.status('INBOX', { messages: true, uidNext: true, uidValidity: true });
    if (!status) throw new Error('STATUS INBOX failed');
    // The account answered: a failed LOGOUT (server hung up first) does not change the verdict.
    await client.logout().catch(() => undefined);
  };
  const attempt = exchange();
  attempt.catch(() => undefined);
  try {
    await Promise.race([attempt, deadline]);
    return { ok: true };
  } catch (error) {
    return { ok: false, errorCode: spokeNonImap ? 'upstream_error' : probeErrorCodeOf(error) };
  } finally {
    clearTimeout(timer);
    client.close();
  }
}
