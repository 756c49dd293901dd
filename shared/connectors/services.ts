import { parseIp } from '../outbound-http/ssrf-guard.js';
import { AppError } from '../errors.js';
import { probeImapAccount, type ImapCredentials, type ProbeResult } from './imap-probe.js';
import { pollImapInbox, type InboxPoll, type MailboxCursor } from './imap-poll.js';

// What each connector's code adds to its catalog row: rules on the credential values beyond
// "every required field is a non-empty string", where its upstream lives (for the SSRF guard), and
// its one light probe. A connector in the catalog without an entry here cannot be connected.

export interface ConnectorService {
  /** Throws 400 `invalid_body` for a value of the right field that cannot be right. */
  validate(fields: Readonly<Record<string, string>>): void;
  /** The host and port the probe connects to: vetted by the SSRF guard first. */
  endpoint(fields: Readonly<Record<string, string>>): { host: string; port: number };
  /**
   * One light probe of `connectAddress` (the address the SSRF guard vetted for the endpoint's host);
   * never throws for upstream trouble, and gives up on its own (10 s for IMAP).
   */
  probe(fields: Readonly<Record<string, string>>, connectAddress: string): Promise<ProbeResult>;
  /** One poll for new mail after `cursor` (docs/connectors.md "Polling"); throws what the upstream threw. */
  poll(fields: Readonly<Record<string, string>>, connectAddress: string, cursor: MailboxCursor | null): Promise<InboxPoll>;
}

const invalid = (message: string) => new AppError(400, 'invalid_body', message);

// A DNS name or an IP literal; anything else (a URL, `user@host`, a path) is not a host and could
// make the guard's URL parse see another host than the one the probe connects to.
const HOST_NAME = /^(?=.{1,253}$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62})(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62}))*\.?$/;
const bareHost = (host: string) => (host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host);

const imapCredentials = (fields: Readonly<Record<string, string>>): ImapCredentials => ({
  host: bareHost(fields.host!), port: Number(fields.port), tls: fields.tls === 'true', username: fields.username!, password: fields.password!,
});

export const imapMail: ConnectorService = {
  validate(fields) {
    const host = fields.host!;
    if (!HOST_NAME.test(host) && !parseIp(host)) throw invalid('credentials.host: expected a host name or an IP address');
    if (!/^\d{1,5}$/.test(fields.port!) || Number(fields.port) < 1 || Number(fields.port) > 65535) {
      throw invalid('credentials.port: expected a port number from 1 to 65535');
    }
    if (fields.tls !== 'true' && fields.tls !== 'false') throw invalid('credentials.tls: expected "true" or "false"');
  },
  endpoint: (fields) => ({ host: bareHost(fields.host!), port: Number(fields.port) }),
  probe: (fields, connectAddress) => probeImapAccount(imapCredentials(fields), { connectAddress }),
  poll: (fields, connectAddress, cursor) => pollImapInbox(imapCredentials(fields), { connectAddress, cursor }),
};

export const connectorServices: Readonly<Record<string, ConnectorService>> = { imap_mail: imapMail };
