// n8n as an optional peer in the bench (`npm run bench -- --peer n8n`): the same small workflow
// (a webhook, a Set node computing greeting and n, the answer) on n8n 2.8.4 as users run it, `n8n
// start` on its default SQLite, driven over real HTTP by the same load as `npm start`. n8n is not a
// dependency of this repository: it is installed once into a cache outside it.
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { findFreePort } from '../../shared/ports.js';
import { processTreeCpuMs } from './cpu.js';
import type { StartedService } from './npm-start.js';

const n8nVersion = '2.8.4';
const installDir = path.join(os.homedir(), '.cache', 'workflow-app-service', `n8n-${n8nVersion}`);
const n8nBin = path.join(installDir, 'node_modules', '.bin', 'n8n');
const workflowId = 'wfappBenchPeer01';
const requestBody = JSON.stringify({ name: 'Ada', n: 21 });
const expectedAnswer = { greeting: 'hello Ada', n: 42 };

/** Runs a command to its end; rejects with its output's tail when it fails or outlasts `timeoutMs`. */
function run(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs: number }): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd: options.cwd, env: options.env, timeout: options.timeoutMs, killSignal: 'SIGKILL', maxBuffer: 64 << 20 }, (error, stdout, stderr) => {
      const output = `${stdout}${stderr}`;
      if (error) reject(new Error(`${path.basename(command)} ${args.join(' ')} failed (${error.killed ? `killed after ${options.timeoutMs} ms` : `exit ${String(error.code)}`}):\n${output.slice(-4000)}`));
      else resolve(output);
    });
  });
}

/**
 * n8n 2.8.4 in ~/.cache/workflow-app-service/n8n-2.8.4/, installed on first use (minutes: about
 * 2,000 packages). Its xlsx dependency is a tarball URL outside the npm registry, unreachable here:
 * the override takes the registry's 0.18.5 instead.
 */
async function ensureN8nInstalled(): Promise<void> {
  if (existsSync(n8nBin)) {
    console.log(`n8n ${n8nVersion}: using the install in ${installDir}`);
    return;
  }
  await mkdir(installDir, { recursive: true });
  await writeFile(path.join(installDir, 'package.json'), `${JSON.stringify({
    name: 'workflow-app-service-bench-n8n', private: true,
    dependencies: { n8n: n8nVersion },
    overrides: { xlsx: '0.18.5' },
  }, null, 2)}\n`);
  console.log(`n8n ${n8nVersion}: installing into ${installDir} (npm install, once; this may take many minutes)…`);
  const started = Date.now();
  const heartbeat = setInterval(() => console.log(`n8n ${n8nVersion}: still installing (${Math.round((Date.now() - started) / 1000)} s)…`), 30_000);
  try {
    // sqlite3's install script builds its binding with node-gyp (its prebuilt download is out of
    // reach here): point node-gyp at this Node's own headers, else it tries to download them.
    const nodeDir = path.resolve(path.dirname(process.execPath), '..');
    const env = { ...process.env };
    if (!env.npm_config_nodedir && existsSync(path.join(nodeDir, 'include', 'node', 'node_api.h'))) env.npm_config_nodedir = nodeDir;
    const output = await run('npm', ['install', '--no-audit', '--no-fund'], { cwd: installDir, env, timeoutMs: 40 * 60_000 });
    await writeFile(path.join(installDir, 'install.log'), output);
  } finally {
    clearInterval(heartbeat);
  }
  if (!existsSync(n8nBin)) throw new Error(`npm install in ${installDir} finished without ${n8nBin}`);
  // Its database driver is native: without its binding n8n cannot start at all.
  await run(process.execPath, ['-e', "require('sqlite3')"], { cwd: installDir, timeoutMs: 60_000 }).catch((error: unknown) => {
    throw new Error(`n8n's sqlite3 binding does not load (were its install scripts skipped?): ${String(error)}`, { cause: error });
  });
  console.log(`n8n ${n8nVersion}: installed in ${Math.round((Date.now() - started) / 1000)} s`);
}

/** Webhook (POST /webhook/bench, answered by the Respond node) → Set (greeting, n) → Respond to Webhook (the Set node's item). */
const benchWorkflow = {
  id: workflowId,
  name: 'bench',
  active: false,
  settings: { executionOrder: 'v1', saveDataSuccessExecution: 'none', saveManualExecutions: false },
  nodes: [
    {
      id: 'c0a80001-0000-4000-8000-000000000001', name: 'Webhook', type: 'n8n-nodes-base.webhook', typeVersion: 2, position: [0, 0],
      webhookId: 'c0a80001-0000-4000-8000-0000000000aa',
      parameters: { httpMethod: 'POST', path: 'bench', responseMode: 'responseNode', options: {} },
    },
    {
      id: 'c0a80001-0000-4000-8000-000000000002', name: 'Set', type: 'n8n-nodes-base.set', typeVersion: 3.4, position: [220, 0],
      parameters: {
        mode: 'manual',
        assignments: {
          assignments: [
            { id: 'c0a80001-0000-4000-8000-0000000000a1', name: 'greeting', type: 'string', value: "={{ 'hello ' + $json.body.name }}" },
            { id: 'c0a80001-0000-4000-8000-0000000000a2', name: 'n', type: 'number', value: '={{ $json.body.n * 2 }}' },
          ],
        },
        includeOtherFields: false,
        options: {},
      },
    },
    {
      id: 'c0a80001-0000-4000-8000-000000000003', name: 'Respond to Webhook', type: 'n8n-nodes-base.respondToWebhook', typeVersion: 1.1, position: [440, 0],
      parameters: { respondWith: 'firstIncomingItem', options: {} },
    },
  ],
  connections: {
    Webhook: { main: [[{ node: 'Set', type: 'main', index: 0 }]] },
    Set: { main: [[{ node: 'Respond to Webhook', type: 'main', index: 0 }]] },
  },
};

/** POSTs the bench body once: the status and the parsed answer, or null while nothing listens. */
async function callWebhook(url: string): Promise<{ status: number; text: string } | null> {
  try {
    const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: requestBody, signal: AbortSignal.timeout(10_000) });
    return { status: response.status, text: await response.text() };
  } catch {
    return null;
  }
}

/**
 * `n8n start` on a fresh user folder (its SQLite database inside), with the bench workflow imported
 * and published by n8n's own CLI before it starts; resolves once the webhook answers as expected.
 */
export async function startN8n(): Promise<StartedService> {
  await ensureN8nInstalled();
  const bin = await realpath(n8nBin);
  const userFolder = await mkdtemp(path.join(os.tmpdir(), 'wfapp-bench-n8n-'));
  const [port, brokerPort] = [await findFreePort(), await findFreePort()];
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    N8N_USER_FOLDER: userFolder,
    N8N_PORT: String(port), N8N_LISTEN_ADDRESS: '127.0.0.1', N8N_HOST: '127.0.0.1', N8N_PROTOCOL: 'http',
    WEBHOOK_URL: `http://127.0.0.1:${port}/`,
    // The internal task runner's broker (5679 by default) on a free port too; the Set node needs no runner.
    N8N_RUNNERS_BROKER_PORT: String(brokerPort), N8N_RUNNERS_BROKER_LISTEN_ADDRESS: '127.0.0.1',
    DB_TYPE: 'sqlite',
    // Comparable with our run path (which keeps no per-run history beyond the run row) and quiet.
    EXECUTIONS_DATA_SAVE_ON_SUCCESS: 'none', EXECUTIONS_DATA_SAVE_MANUAL_EXECUTIONS: 'false',
    N8N_LOG_LEVEL: 'warn',
    N8N_DIAGNOSTICS_ENABLED: 'false', N8N_DIAGNOSTICS_CONFIG_FRONTEND: '', N8N_DIAGNOSTICS_CONFIG_BACKEND: '',
    N8N_PERSONALIZATION_ENABLED: 'false',
    N8N_VERSION_NOTIFICATIONS_ENABLED: 'false', N8N_VERSION_NOTIFICATIONS_WHATS_NEW_ENABLED: 'false',
    N8N_TEMPLATES_ENABLED: 'false', N8N_DYNAMIC_BANNERS_ENABLED: 'false', N8N_HIRING_BANNER_ENABLED: 'false',
    N8N_AI_ENABLED: 'false', N8N_METRICS: 'false',
    N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS: 'true',
  };
  for (const name of ['NODE_OPTIONS', 'DB_SQLITE_DATABASE', 'N8N_ENCRYPTION_KEY', 'N8N_CONFIG_FILES']) delete env[name];

  let child: ReturnType<typeof spawn> | undefined;
  let output = '';
  try {
    // n8n's CLI on the same user folder: migrations create the database and its owner (a shell
    // user, no setup needed), import puts the workflow into the owner's project (always inactive),
    // publish makes its current version the active one, which `n8n start` then registers.
    const workflowFile = path.join(userFolder, 'bench-workflow.json');
    await writeFile(workflowFile, JSON.stringify(benchWorkflow));
    const cliStarted = Date.now();
    output += await run(process.execPath, [bin, 'import:workflow', `--input=${workflowFile}`], { env, timeoutMs: 180_000 });
    output += await run(process.execPath, [bin, 'publish:workflow', `--id=${workflowId}`], { env, timeoutMs: 180_000 });
    console.log(`n8n ${n8nVersion}: workflow imported and published (${Math.round((Date.now() - cliStarted) / 1000)} s)`);

    const started = Date.now();
    const spawned = spawn(process.execPath, [bin, 'start'], { cwd: userFolder, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    child = spawned;
    spawned.stdout.on('data', (chunk: Buffer) => { output = (output + chunk.toString()).slice(-20_000); });
    spawned.stderr.on('data', (chunk: Buffer) => { output = (output + chunk.toString()).slice(-20_000); });
    const exited = new Promise<void>((resolve) => spawned.once('exit', () => resolve()));
    const url = `http://127.0.0.1:${port}/webhook/bench`;
    const deadline = Date.now() + 240_000;
    // Until its webhooks are registered n8n answers 404, and before that 200 with the plain text
    // "n8n is starting up. Please wait": ready is a 200 whose body is JSON.
    const parsed = (text: string): unknown => { try { return JSON.parse(text); } catch { return undefined; } };
    let last: { status: number; text: string } | null = null;
    while (spawned.exitCode === null && spawned.signalCode === null && Date.now() < deadline) {
      last = await callWebhook(url);
      if (last?.status === 200 && parsed(last.text) !== undefined) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    if (last?.status !== 200 || parsed(last.text) === undefined) throw new Error(`n8n did not answer 200 with JSON on ${url} (last: ${last === null ? 'no answer' : `${last.status} ${last.text.slice(0, 500)}`})`);
    if (JSON.stringify(parsed(last.text)) !== JSON.stringify(expectedAnswer)) throw new Error(`n8n answered ${last.text.slice(0, 500)}, not ${JSON.stringify(expectedAnswer)}`);
    console.log(`n8n ${n8nVersion}: ready on ${url} (${Math.round((Date.now() - started) / 1000)} s after start)`);

    const pid = spawned.pid!;
    return {
      name: `n8n ${n8nVersion}`,
      target: { url, headers: { 'content-type': 'application/json' }, body: requestBody },
      // SQLite runs inside n8n's process: its tree is n8n and its database (and its task runner, if started).
      cpu: () => ({ n8n: processTreeCpuMs(pid) ?? 0 }),
      async stop() {
        if (spawned.exitCode === null && spawned.signalCode === null) {
          process.kill(-pid, 'SIGINT');
          // n8n waits for running executions up to its graceful shutdown timeout (30 s by default).
          const killer = setTimeout(() => { try { process.kill(-pid, 'SIGKILL'); } catch { /* gone */ } }, 45_000);
          await exited;
          clearTimeout(killer);
        }
        await rm(userFolder, { recursive: true, force: true });
      },
    };
  } catch (error) {
    if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
    }
    await rm(userFolder, { recursive: true, force: true });
    throw new Error(`${error instanceof Error ? error.message : String(error)}\n--- n8n output ---\n${output.slice(-6000)}`, { cause: error });
  }
}
