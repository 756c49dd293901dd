import { spawn, type ChildProcess } from 'node:child_process';
import { Connection } from '@temporalio/client';
import { withParentDeathSignal } from '../shared/parent-death-signal.js';
import { findFreePort, isPortFree, waitForPort } from '../shared/ports.js';
import { noTemporalMessage, resolveTemporalCli } from './cli-binary.js';
import { searchAttributeDefinitions, searchAttributeKeys, temporalCliTypeName } from './search-attributes.js';
import { TRANSFER_QUEUE_READS_PER_SECOND, transferQueueReadsSetting } from './history-queues.js';

export interface DevServerHandle {
  address: string;
  /** Web UI address, when the UI was asked for. */
  uiUrl: string | null;
  /** The server's process id (the bench reads its CPU time), when we spawned it. */
  pid: number | null;
  /**
   * Resolves when the server ends, whoever ended it (`npm start` restarts it: scripts/dev/supervisor.ts).
   * Never resolves for the SDK's download, whose process we do not see.
   */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stop(): Promise<void>;
}

export interface DevServerOptions {
  namespace: string;
  /**
   * Exactly this frontend port (the start fails when it is taken): a restart must come back where
   * every connection already points. Omitted: a free port.
   */
  port?: number;
  /** Serve the Web UI on this port (falls back to a free port when it is taken); omit for headless. */
  uiPort?: number;
  /** SQLite file to keep workflow history across restarts; omit for an in-memory server. */
  dbFile?: string;
  log?: (line: string) => void;
  /** Every chunk the server writes (its JSON log at `warn`): the long-runs bench counts its warnings. */
  onOutput?: (chunk: string) => void;
}

/** Starts `temporal server start-dev` (or the SDK's download of it) on loopback ports, free ones unless given. */
export async function startTemporalDevServer(options: DevServerOptions): Promise<DevServerHandle> {
  const log = options.log ?? (() => {});
  const source = await resolveTemporalCli(log);
  if (options.port !== undefined && !(await isPortFree(options.port))) throw new Error(`port ${options.port} is still in use`);
  const port = options.port ?? await findFreePort();
  const uiPort = options.uiPort === undefined
    ? undefined
    : (await isPortFree(options.uiPort)) ? options.uiPort : await findFreePort();
  const address = `127.0.0.1:${port}`;
  const uiUrl = uiPort ? `http://127.0.0.1:${uiPort}` : null;

  if (source.kind === 'sdk-download') {
    try {
      const { TestWorkflowEnvironment } = await import('@temporalio/testing');
      const env = await TestWorkflowEnvironment.createLocal({
        server: {
          ip: '127.0.0.1', port, namespace: options.namespace, ui: uiPort !== undefined, uiPort,
          dbFilename: options.dbFile, log: { format: 'json', level: 'warn' },
          searchAttributes: Object.values(searchAttributeKeys),
        },
      });
      return { address: env.address, uiUrl, pid: null, exited: new Promise(() => {}), stop: () => env.teardown() };
    } catch (error) {
      throw new Error(`${noTemporalMessage}\n(The SDK download failed: ${(error as Error).message})`, { cause: error });
    }
  }

  const args = [
    'server', 'start-dev',
    '--ip', '127.0.0.1', '--port', String(port),
    '--namespace', options.namespace,
    '--log-level', 'warn', '--log-format', 'json',
    ...(uiPort ? ['--ui-port', String(uiPort), '--ui-ip', '127.0.0.1'] : ['--headless']),
    ...(options.dbFile ? ['--db-filename', options.dbFile] : []),
    // The kept store in WAL mode with synchronous=normal: a commit is an append to the WAL, synced
    // at checkpoints, instead of two fsyncs. A crash of the server or of the machine's processes
    // loses nothing; a power loss can lose the last commits since a checkpoint, which the PostgreSQL
    // outbox starts again (docs/decisions.md "The embedded Temporal store"). Runs/s under npm start:
    // about 2x, Temporal CPU per run about half.
    ...(options.dbFile ? ['--sqlite-pragma', 'journal_mode=wal', '--sqlite-pragma', 'synchronous=normal'] : []),
    // Registered at every start (a no-op when a kept store already has them), so operators can filter by them.
    ...searchAttributeDefinitions.flatMap(({ name, type }) => ['--search-attribute', `${name}=${temporalCliTypeName[type]}`]),
    // One task-queue partition instead of four: with a handful of pollers on one node, tasks that
    // land in a partition no poller is on wait for forwarding while later ones are served, which
    // spread latency under load (docs/decisions.md "Tail latency").
    '--dynamic-config-value', 'matching.numTaskqueueReadPartitions=1',
    '--dynamic-config-value', 'matching.numTaskqueueWritePartitions=1',
    // An activity scheduled by a workflow task comes back in that task's answer to the worker that
    // will run it (the SDK asks for this by default), not through a task queue poll.
    '--dynamic-config-value', 'system.enableActivityEagerExecution=true',
    '--dynamic-config-value', `${transferQueueReadsSetting}=${TRANSFER_QUEUE_READS_PER_SECOND}`,
  ];
  // Own process group: a Ctrl-C in the terminal reaches us, and we stop the server after the
  // workers have drained, instead of the server vanishing under them.
  const [command, commandArgs] = withParentDeathSignal(source.path, args);
  const child = spawn(command, commandArgs, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  const remember = (chunk: Buffer) => {
    const text = chunk.toString();
    output = (output + text).slice(-4000);
    options.onOutput?.(text);
  };
  child.stdout?.on('data', remember);
  child.stderr?.on('data', remember);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => {
    if (process.env.DEBUG_STOP) log(`temporal exited code=${code} signal=${signal} ${output.slice(-500)}`);
    resolve({ code, signal });
  }));

  try {
    const exitedEarly = exited.then(({ code }) => Promise.reject(new Error(`temporal exited with code ${code}: ${output}`)));
    exitedEarly.catch(() => {}); // once serving, a later exit is reported by stop(), not as an unhandled rejection
    await Promise.race([waitUntilServing(address, options.namespace), exitedEarly]);
  } catch (error) {
    await stopChild(child, exited);
    throw error;
  }
  log(`Temporal dev server (${source.origin}: ${source.path}) on ${address}`);
  return { address, uiUrl, pid: child.pid ?? null, exited, stop: () => stopChild(child, exited) };
}

async function waitUntilServing(address: string, namespace: string, timeoutMs = 60_000): Promise<void> {
  const [host, port] = address.split(':') as [string, string];
  await waitForPort(host, Number(port), timeoutMs);
  const deadline = Date.now() + timeoutMs;
  const connection = await Connection.connect({ address });
  try {
    for (;;) {
      try {
        await connection.workflowService.describeNamespace({ namespace });
        // The CLI registers the search attributes just after the frontend starts serving.
        const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
        const missing = searchAttributeDefinitions.filter(({ name }) => !customAttributes?.[name]).map(({ name }) => name);
        if (missing.length === 0) return;
        throw new Error(`search attributes not registered yet: ${missing.join(', ')}`);
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  } finally {
    await connection.close();
  }
}

async function stopChild(child: ChildProcess, exited: Promise<unknown>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}
