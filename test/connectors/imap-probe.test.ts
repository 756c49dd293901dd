import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeErrorCodeOf, probeImapAccount, type ImapCredentials } from '../../shared/connectors/imap-probe.js';
import { findFreePort } from '../../shared/ports.js';
import { startDovecot, type Dovecot } from '../harness/dovecot.js';

/** A TCP server on 127.0.0.1 that plays one scripted part of IMAP on every connection. */
async function fakeServer(onConnection: (socket: Socket) => void): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.once('close', () => sockets.delete(socket));
    onConnection(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: () => new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    }),
  };
}

/** Greets like an IMAP server, then answers the client's first command with `line` and hangs up. */
const greetThenAnswer = (line: string) => (socket: Socket) => {
  socket.write('* OK [CAPABILITY IMAP4rev1 AUTH=PLAIN] ready\r\n');
  socket.once('data', () => socket.end(`${line}\r\n`));
};

/** Probes the account's credentials against a scripted server, which is then closed. */
async function probeScripted(credentials: ImapCredentials, script: (socket: Socket) => void, timeoutMs: number) {
  const server = await fakeServer(script);
  try {
    return await probeImapAccount({ ...credentials, port: server.port }, { timeoutMs });
  } finally { await server.close(); }
}

describe('probeImapAccount against a real dovecot and scripted servers (CONTRACTS.md "Connectors", probe outcomes)', () => {
  let dovecot: Dovecot;
  let account: ImapCredentials;

  beforeAll(async () => {
    dovecot = await startDovecot();
    await dovecot.users.add('probe-user', 'correct horse battery');
    account = { host: dovecot.host, port: dovecot.port, tls: false, username: 'probe-user', password: 'correct horse battery' };
  });
  afterAll(async () => { await dovecot?.stop(); });

  it('the right password: connects, authenticates, reads STATUS INBOX → ok', async () => {
    await dovecot.appendMessage('probe-user', 'From: a@example.test\r\nSubject: hello\r\n\r\nbody\r\n');
    expect(await probeImapAccount(account)).toEqual({ ok: true });
  });

  it('connects to the vetted address it is given, never resolving the name again (the name that cannot resolve still probes ok)', async () => {
    const unresolvable = { ...account, host: 'imap.pinned.invalid' };
    expect(await probeImapAccount(unresolvable, { timeoutMs: 3_000 })).toEqual({ ok: false, errorCode: 'gateway_unreachable' });
    expect(await probeImapAccount(unresolvable, { connectAddress: dovecot.host })).toEqual({ ok: true });
  });

  it('a wrong password → credential_invalid (dovecot: NO [AUTHENTICATIONFAILED]), and the password is never printed', async () => {
    const printed: string[] = [];
    const originals = { out: process.stdout.write.bind(process.stdout), err: process.stderr.write.bind(process.stderr) };
    const capture = (chunk: unknown) => { printed.push(String(chunk)); return true; };
    process.stdout.write = capture as typeof process.stdout.write;
    process.stderr.write = capture as typeof process.stderr.write;
    try {
      expect(await probeImapAccount({ ...account, password: 'wrong-password-xyz' })).toEqual({ ok: false, errorCode: 'credential_invalid' });
    } finally {
      process.stdout.write = originals.out;
      process.stderr.write = originals.err;
    }
    expect(printed.join('')).not.toContain('wrong-password-xyz');
  });

  it('an unknown user is a wrong credential too', async () => {
    expect(await probeImapAccount({ ...account, username: 'nobody-here' })).toEqual({ ok: false, errorCode: 'credential_invalid' });
  });

  it('nothing listening on the port → gateway_unreachable', async () => {
    expect(await probeImapAccount({ ...account, port: await findFreePort() })).toEqual({ ok: false, errorCode: 'gateway_unreachable' });
  });

  it('a connection reset by the server → gateway_unreachable', async () => {
    expect(await probeScripted(account, (socket) => socket.resetAndDestroy(), 10_000)).toEqual({ ok: false, errorCode: 'gateway_unreachable' });
  });

  it('a server that accepts and never speaks → gateway_timeout, once the time is up', async () => {
    const started = Date.now();
    expect(await probeScripted(account, () => undefined, 400)).toEqual({ ok: false, errorCode: 'gateway_timeout' });
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(390);
    expect(elapsed).toBeLessThan(3_000);
  });

  it('a server that greets, then stops answering after the login → gateway_timeout', async () => {
    expect(await probeScripted(account, (socket) => socket.write('* OK [CAPABILITY IMAP4rev1 AUTH=PLAIN] ready\r\n'), 400)).toEqual({ ok: false, errorCode: 'gateway_timeout' });
  });

  it('a server that greets, then answers BYE Too many connections → upstream_rate_limited', async () => {
    expect(await probeScripted(account, greetThenAnswer('* BYE Too many connections'), 2_000)).toEqual({ ok: false, errorCode: 'upstream_rate_limited' });
  });

  it('a server whose greeting is a BYE → upstream_rate_limited', async () => {
    expect(await probeScripted(account, (socket) => socket.end('* BYE Too many connections from your IP\r\n'), 2_000)).toEqual({ ok: false, errorCode: 'upstream_rate_limited' });
  });

  it('a server that speaks garbage and hangs up → upstream_error', async () => {
    expect(await probeScripted(account, (socket) => socket.end('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n'), 2_000)).toEqual({ ok: false, errorCode: 'upstream_error' });
  });

  it('a non-IMAP service that keeps the connection open (an SMTP port) → upstream_error at once, not a timeout', async () => {
    const started = Date.now();
    expect(await probeScripted(account, (socket) => socket.write('220 mail.example.test ESMTP ready\r\n'), 5_000)).toEqual({ ok: false, errorCode: 'upstream_error' });
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('binary noise held open → upstream_error', async () => {
    expect(await probeScripted(account, (socket) => socket.write(Buffer.from([0, 1, 2, 255, 13, 10])), 5_000)).toEqual({ ok: false, errorCode: 'upstream_error' });
  });

  it('a login refused without AUTHENTICATIONFAILED (server trouble) → upstream_error, not a wrong credential', async () => {
    expect(await probeScripted(account, (socket) => {
      socket.write('* OK [CAPABILITY IMAP4rev1] ready\r\n');
      socket.on('data', (chunk: Buffer) => {
        const tag = chunk.toString().split(' ')[0];
        socket.write(`${tag} NO [UNAVAILABLE] Temporary authentication failure\r\n`);
      });
    }, 2_000)).toEqual({ ok: false, errorCode: 'upstream_error' });
  });

  it('failures that cannot be staged on 127.0.0.1 map as the contract says', () => {
    expect(probeErrorCodeOf(Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' }))).toBe('gateway_unreachable');
    expect(probeErrorCodeOf(Object.assign(new Error('throttled'), { code: 'ETHROTTLE' }))).toBe('upstream_rate_limited');
    expect(probeErrorCodeOf(Object.assign(new Error('NO'), { authenticationFailed: true, serverResponseCode: 'LIMIT' }))).toBe('upstream_rate_limited');
    expect(probeErrorCodeOf(Object.assign(new Error('cert'), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' }))).toBe('upstream_error');
    expect(probeErrorCodeOf('not an error')).toBe('upstream_error');
  });

  it('dovecot restarted → the next probe on the same port succeeds', async () => {
    await dovecot.restart();
    expect(await probeImapAccount(account)).toEqual({ ok: true });
  });
});
