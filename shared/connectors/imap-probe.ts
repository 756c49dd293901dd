// To be written (issue 23): one light probe of an IMAP account (connect, authenticate, STATUS INBOX).
export type ProbeErrorCode = 'credential_invalid' | 'upstream_rate_limited' | 'upstream_error' | 'gateway_unreachable' | 'gateway_timeout' | 'gateway_auth_failed';

export interface ImapCredentials { host: string; port: number; tls: boolean; username: string; password: string }

export type ProbeResult = { ok: true } | { ok: false; errorCode: ProbeErrorCode };

/** Connects, authenticates and reads STATUS of INBOX; never throws for upstream trouble. */
export async function probeImapAccount(_credentials: ImapCredentials, _options: { timeoutMs?: number } = {}): Promise<ProbeResult> {
  return { ok: false, errorCode: 'upstream_error' };
}
