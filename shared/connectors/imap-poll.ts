import { imapClientFor, type ImapCredentials } from './imap-probe.js';
import { parseMail, type MailInputs } from './mail.js';

// One poll of an IMAP inbox (docs/connectors.md "Polling"): one session, `STATUS (UIDNEXT
// UIDVALIDITY)`, then the mail after the cursor by UID. New mail is whatever has a UID above the
// cursor: `\Seen` is never read or set (a person reading the mail first must not hide it), and the
// mailbox is opened read-only.

export interface MailboxCursor { uidvalidity: number; lastUid: number }

export interface PolledMail { uid: number; inputs: MailInputs }

export interface InboxPoll {
  /** Where the cursor goes: a changed UIDVALIDITY (or no cursor) re-baselines to the mailbox's end with no mail. */
  cursor: MailboxCursor;
  rebaselined: boolean;
  mails: PolledMail[];
  /** More mail waits past this poll's bound: poll again at once. */
  more: boolean;
}

/** The most mail one poll takes; the rest waits for the next poll, which starts right after (docs/connectors.md). */
export const MAX_MAILS_PER_POLL = 500;
/** A poll's session gives up after this long without an answer from the server. */
export const IMAP_POLL_TIMEOUT_MS = 30_000;
/** How much of a mail's raw source is fetched: enough for headers and a text body, never a whole attachment. */
const MAX_SOURCE_BYTES = 2 * 1024 * 1024;

export async function pollImapInbox(
  credentials: ImapCredentials, options: { connectAddress: string; cursor: MailboxCursor | null; timeoutMs?: number },
): Promise<InboxPoll> {
  const client = await imapClientFor(credentials, { timeoutMs: options.timeoutMs ?? IMAP_POLL_TIMEOUT_MS, connectAddress: options.connectAddress });
  try {
    await client.connect();
    const status = await client.status('INBOX', { uidNext: true, uidValidity: true });
    if (!status || status.uidValidity === undefined || status.uidNext === undefined) throw new Error('STATUS INBOX failed');
    const uidvalidity = Number(status.uidValidity);
    const end = status.uidNext - 1;
    const { cursor } = options;
    // A new mailbox generation: the old UIDs mean nothing, and which of its mail was already seen
    // cannot be known, so none of it runs (docs/connectors.md "UIDVALIDITY").
    if (!cursor || cursor.uidvalidity !== uidvalidity) return { cursor: { uidvalidity, lastUid: end }, rebaselined: true, mails: [], more: false };
    if (end <= cursor.lastUid) return { cursor, rebaselined: false, mails: [], more: false };

    // Bounded range: UIDs below UIDNEXT that the server does not list were expunged, so the cursor may pass them.
    const last = Math.min(end, cursor.lastUid + MAX_MAILS_PER_POLL);
    const lock = await client.getMailboxLock('INBOX', { readOnly: true });
    const raw: Array<{ uid: number; source: Buffer }> = [];
    try {
      for await (const message of client.fetch(`${cursor.lastUid + 1}:${last}`, { uid: true, source: { maxLength: MAX_SOURCE_BYTES } }, { uid: true })) {
        // `n:m` may still answer a UID outside the range on some servers: keep only what is new.
        if (message.uid > cursor.lastUid && message.uid <= last && message.source) raw.push({ uid: message.uid, source: message.source });
      }
    } finally {
      lock.release();
    }
    await client.logout().catch(() => undefined);
    const mails = await Promise.all(raw.sort((a, b) => a.uid - b.uid).map(async ({ uid, source }) => ({ uid, inputs: await parseMail(source) })));
    return { cursor: { uidvalidity, lastUid: last }, rebaselined: false, mails, more: last < end };
  } finally {
    client.close();
  }
}
