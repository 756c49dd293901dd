import { spawn } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { findFreePort, waitForPort } from '../../shared/ports.js';
import { ensureTestDependencies } from '../ensure-test-dependencies.js';

// The download bench's baseline: nginx from the Debian package, serving a directory with sendfile,
// started in the foreground on a generated configuration so that nothing outside the work dir is touched.

const NGINX = '/usr/sbin/nginx';

/** Installs the Debian package `nginx` when its binary is missing (as the test dependencies are). */
export async function ensureNginx(): Promise<void> {
  await ensureTestDependencies({
    dependencies: [{ binary: NGINX, aptPackage: 'nginx', usedBy: 'the download bench baseline (scripts/bench/downloads.ts)' }],
  });
}

export interface NginxServer { url: string; pid: number | null; stop(): Promise<void> }

/**
 * nginx serving `root` on 127.0.0.1 with `workers` worker processes ('auto': one per core). Its pid,
 * error log, temp paths and configuration live under `prefix`; the workers run as the current user
 * (root stays root, which nginx otherwise refuses for its workers' default `nobody`).
 */
export async function startNginx(options: { prefix: string; root: string; workers: number | 'auto' }): Promise<NginxServer> {
  const { prefix, root, workers } = options;
  await mkdir(path.join(prefix, 'logs'), { recursive: true });
  const port = await findFreePort();
  const temp = (name: string) => `${name}_temp_path ${path.join(prefix, `${name}_temp`)};`;
  const conf = path.join(prefix, 'nginx.conf');
  await writeFile(conf, [
    process.getuid?.() === 0 ? 'user root;' : '',
    `worker_processes ${workers};`,
    `pid ${path.join(prefix, 'nginx.pid')};`,
    `error_log ${path.join(prefix, 'logs', 'error.log')} warn;`,
    'events { worker_connections 1024; }',
    'http {',
    '  access_log off;',
    '  sendfile on; tcp_nopush on; keepalive_requests 100000;',
    '  default_type application/octet-stream;',
    `  ${temp('client_body')} ${temp('proxy')} ${temp('fastcgi')} ${temp('uwsgi')} ${temp('scgi')}`,
    `  server { listen 127.0.0.1:${port}; root ${root}; }`,
    '}',
    '',
  ].join('\n'));
  const child = spawn(NGINX, ['-p', prefix, '-c', conf, '-g', 'daemon off;'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
  let spawnError: Error | null = null;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', (error) => { spawnError = error; resolve(); });
  });
  const exitedEarly = exited.then((): never => { throw spawnError ?? new Error('nginx exited'); });
  exitedEarly.catch(() => undefined); // a stop() exit is expected: only the race below reports it
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGQUIT'); // graceful: the workers finish what they are sending
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };
  try {
    await Promise.race([waitForPort('127.0.0.1', port, 10_000), exitedEarly]);
  } catch (error) {
    await stop();
    const log = await readFile(path.join(prefix, 'logs', 'error.log'), 'utf8').catch(() => '');
    throw new Error(`nginx did not start: ${(error as Error).message}\n${stderr}${log}`, { cause: error });
  }
  return { url: `http://127.0.0.1:${port}`, pid: child.pid ?? null, stop };
}

