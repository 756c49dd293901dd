import type { AddressObject } from 'mailparser';

// A mail as a run gets it (CONTRACTS.md "Connectors"): strings only; `date` ISO 8601, `from` the
// From header as sent, `text` the text/plain body. Parsed by mailparser (MIME, encodings, charsets)
// from the raw message the poll fetched.

export interface MailInputs {
  subject: string;
  from: string;
  to: string;
  date: string;
  text: string;
  messageId: string;
}

/** The text kept of a mail's body: run inputs have their own limit, and a ledger row should stay small. */
export const MAX_MAIL_TEXT_CHARS = 256 * 1024;

/** A header as the sender wrote it (unfolded), or '' when the mail has none. */
function rawHeader(source: string, name: string): string {
  const end = source.search(/\r?\n\r?\n/);
  const head = (end < 0 ? source : source.slice(0, end)).replace(/\r?\n[ \t]+/g, ' ');
  const match = new RegExp(`^${name}:[ \\t]*(.*)$`, 'im').exec(head);
  return match ? match[1]!.trim() : '';
}

const addressText = (value: AddressObject | AddressObject[] | undefined): string =>
  (Array.isArray(value) ? value.map((a) => a.text).join(', ') : value?.text ?? '');

export async function parseMail(source: Buffer): Promise<MailInputs> {
  // Loaded on the first mail, like imapflow (imap-probe.ts): a process that never polls an inbox
  // does not carry it.
  const { simpleParser } = await import('mailparser');
  const parsed = await simpleParser(source, { skipHtmlToText: true, skipImageLinks: true, skipTextLinks: true, skipTextToHtml: true });
  const headerText = source.subarray(0, 64 * 1024).toString('latin1');
  return {
    subject: parsed.subject ?? '',
    from: rawHeader(headerText, 'From') || addressText(parsed.from),
    to: addressText(parsed.to),
    date: parsed.date && !Number.isNaN(parsed.date.getTime()) ? parsed.date.toISOString() : '',
    text: (parsed.text ?? '').slice(0, MAX_MAIL_TEXT_CHARS),
    messageId: parsed.messageId ?? '',
  };
}
