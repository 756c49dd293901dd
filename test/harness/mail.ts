import { randomUUID } from 'node:crypto';

// Mail for the connector tests and the polling workflow's replay capture: an RFC 822 message, and
// an app that reads the mail inputs of CONTRACTS.md "Connectors".

export const mailGraph = {
  blocks: [
    { id: 's', type: 'input', name: 'subject', config: { valueType: 'string', required: true } },
    { id: 'f', type: 'input', name: 'from', config: { valueType: 'string', required: true } },
    { id: 't', type: 'input', name: 'text', config: { valueType: 'string', required: false } },
    { id: 'o', type: 'output', name: 'result', config: { value: '{{s}} / {{f}}' } },
  ],
  edges: [{ from: 's', to: 'o' }, { from: 'f', to: 'o' }, { from: 't', to: 'o' }],
};

export function mail(subject: string, options: { from?: string; body?: string; messageId?: string } = {}): string {
  return [
    `From: ${options.from ?? '"Ann Sender" <ann@example.com>'}`,
    'To: inbox@example.com',
    `Subject: ${subject}`,
    'Date: Mon, 23 Nov 2026 10:00:00 +0000',
    `Message-ID: ${options.messageId ?? `<${randomUUID()}@example.com>`}`,
    'Content-Type: text/plain; charset=utf-8',
    '',
    options.body ?? `Body of ${subject}`,
    '',
  ].join('\r\n');
}
