import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { appendFile, chmod, chown, mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ImapFlow } from 'imapflow';
import { findFreePort, waitForPort } from '../../shared/ports.js';

const DOVECOT = '/usr/sbin/dovecot';
// Dovecot refuses to keep mail as uid 0, so mail (and dovecot's own internal and login processes)
// run as this unprivileged system user, created on first use when the tests run as root.
const MAIL_USER = 'wfapp-mail';

const run = promisify(execFile);

export interface Dovecot {
  host: string;
  port: number;
  users: { add(user: string, password: string): Promise<void> };
  /** Appends one RFC 822 message to the user's INBOX through IMAP APPEND. */
  appendMessage(user: string, rfc822: string): Promise<void>;
  /** Appends several in one session, in order. */
  appendMessages(user: string, messages: readonly string[]): Promise<void>;
  /** Deletes the user's whole mailbox (mail, UID list) while stopped: the INBOX comes back with a new UIDVALIDITY. */
  recreateMailbox(user: string): Promise<void>;
  stop(): Promise<void>;
  /** Stops the server and starts it again on the same port with the same users and mail. */
  restart(): Promise<void>;
}

interface Account { name: string; uid: number; gid: number }

async function lookUpAccount(name: string): Promise<Account | undefined> {
  try {
    const [uid, gid] = await Promise.all([run('id', ['-u', name]), run('id', ['-g', name])]);
    return { name, uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  } catch {
    return undefined;
  }
}

/** As root: the dedicated mail user (created if missing). Otherwise dovecot runs entirely as this user. */
async function mailAccount(): Promise<Account> {
  if (process.getuid?.() !== 0) {
    const me = os.userInfo();
    return { name: me.username, uid: me.uid, gid: me.gid };
  }
  const existing = await lookUpAccount(MAIL_USER);
  if (existing) return existing;
  // Test files start in parallel: another one may create the user between the look-up and here.
  await run('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', MAIL_USER]).catch(() => undefined);
  const created = await lookUpAccount(MAIL_USER);
  if (!created) throw new Error(`could not create the unprivileged mail user ${MAIL_USER} for dovecot`);
  return created;
}

function configuration(dir: string, port: number, account: Account): string {
  return `
instance_name = dovecot-test-${port}
base_dir = ${dir}/run
state_dir = ${dir}/state
log_path = /dev/stderr
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
default_internal_user = ${account.name}
default_login_user = ${account.name}
first_valid_uid = ${account.uid}
last_valid_uid = ${account.uid}
first_valid_gid = ${account.gid}
mail_location = maildir:~/Maildir
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u ${dir}/passwd
}
userdb {
  driver = passwd-file
  args = username_format=%u ${dir}/passwd
  default_fields = uid=${account.uid} gid=${account.gid} home=${dir}/mail/%u
}
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = ${port}
  }
  inet_listener imaps {
    port = 0
  }
}
# Every test connects from 127.0.0.1: the per-IP penalty for failed logins would grow to 15 s,
# beyond a probe's 10 s budget. The fixed 2 s delay of a failed login stays, as in production.
service anvil {
  unix_listener anvil-auth-penalty {
    mode = 0
  }
}
`;
}

/**
 * A throwaway Debian dovecot (IMAP only, no TLS, plaintext logins) in the foreground on a free
 * 127.0.0.1 port, with its configuration, sockets, state, users and mail in one temp dir removed by
 * `stop()`. `stop()` ends exactly the process it started.
 */
export async function startDovecot(): Promise<Dovecot> {
  const account = await mailAccount();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'dovecot-'));
  const port = await findFreePort();
  const conf = path.join(dir, 'dovecot.conf');
  const passwd = path.join(dir, 'passwd');
  // The unprivileged processes must reach the sockets under the temp dir and write the mail.
  await chmod(dir, 0o755);
  await mkdir(path.join(dir, 'mail'));
  await writeFile(passwd, '', { mode: 0o600 });
  await writeFile(conf, configuration(dir, port, account));
  await chown(path.join(dir, 'mail'), account.uid, account.gid);
  await chown(passwd, account.uid, account.gid);

  const passwords = new Map<string, string>();
  let child: ChildProcess | undefined;

  const start = async () => {
    const started = spawn(DOVECOT, ['-F', '-c', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
    child = started;
    let output = '';
    const collect = (chunk: Buffer) => { output += chunk.toString(); };
    started.stdout.on('data', collect);
    started.stderr.on('data', collect);
    const failed = new Promise<never>((_, reject) => {
      started.once('error', (error: NodeJS.ErrnoException) => reject(error.code === 'ENOENT'
        ? new Error(`dovecot is required at ${DOVECOT} for the connector tests. npm test installs it (scripts/ensure-test-dependencies.ts) when it runs as root or with passwordless sudo; otherwise run: sudo apt-get update && sudo apt-get install -y dovecot-imapd`)
        : error));
      started.once('exit', (code) => reject(new Error(`dovecot exited with ${code}: ${output}`)));
    });
    failed.catch(() => undefined);
    await Promise.race([waitForPort('127.0.0.1', port, 10_000), failed]);
  };

  const stop = () => new Promise<void>((resolve) => {
    const current = child;
    if (!current || current.exitCode !== null || current.signalCode !== null) return resolve();
    current.once('exit', () => resolve());
    current.kill('SIGTERM');
  });

  const appendAll = async (user: string, messages: readonly string[]) => {
    const password = passwords.get(user);
    if (password === undefined) throw new Error(`no test dovecot user ${user}`);
    const client = new ImapFlow({ host: '127.0.0.1', port, secure: false, auth: { user, pass: password }, logger: false });
    await client.connect();
    try {
      for (const rfc822 of messages) await client.append('INBOX', rfc822);
    } finally {
      await client.logout();
    }
  };

  await start();

  return {
    host: '127.0.0.1',
    port,
    users: {
      async add(user, password) {
        if (/[:\s]/.test(user) || /[:\n]/.test(password)) throw new Error('user names and passwords of the test dovecot cannot hold ":" or new lines');
        passwords.set(user, password);
        // dovecot re-reads the passwd-file when its mtime changes: no reload needed, but a second
        // change within the same second may go unseen, so the file is touched until the login works.
        await appendFile(passwd, `${user}:{PLAIN}${password}::::::\n`);
        for (let tries = 0; ; tries += 1) {
          const client = new ImapFlow({ host: '127.0.0.1', port, secure: false, auth: { user, pass: password }, logger: false });
          client.on('error', () => undefined);
          const ok = await client.connect().then(() => true, () => false);
          if (ok) {
            await client.logout().catch(() => undefined);
            return;
          }
          client.close();
          if (tries >= 10) throw new Error(`the test dovecot does not accept the new user ${user}`);
          await new Promise((resolve) => setTimeout(resolve, 1_100));
          const now = new Date();
          await utimes(passwd, now, now);
        }
      },
    },
    async appendMessage(user, rfc822) {
      await appendAll(user, [rfc822]);
    },
    async appendMessages(user, messages) {
      await appendAll(user, messages);
    },
    async recreateMailbox(user) {
      await stop();
      await rm(path.join(dir, 'mail', user), { recursive: true, force: true });
      await start();
    },
    async stop() {
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
    async restart() {
      await stop();
      await start();
    },
  };
}
