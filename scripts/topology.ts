// `npm run topology`: the production layout on this machine (scripts/topology/start.ts), printed as
// one origin; Ctrl-C stops it in order. `npm run topology -- --chaos [--rounds N] [--json PATH]`
// runs it under load while SIGKILLing each role twice, then counts (scripts/topology/chaos.ts).
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DataDirLockedError, lockDataDir } from './dev/data-dir-lock.js';
import { startTopology, type Topology } from './topology/start.js';

const say = (line: string) => process.stdout.write(`[topology] ${line}\n`);
const argv = process.argv.slice(2);

if (argv.includes('--chaos')) {
  const { runTopologyChaosCommand } = await import('./topology/chaos-command.js');
  process.exit(await runTopologyChaosCommand(argv.filter((arg) => arg !== '--chaos')));
}
if (argv.length) {
  process.stderr.write(`unknown arguments: ${argv.join(' ')}\nusage: npm run topology [-- --chaos [--rounds N] [--json PATH]]\n`);
  process.exit(2);
}

const startedAt = performance.now();
const dir = path.resolve(process.env.DATA_DIR ?? path.join(fileURLToPath(new URL('..', import.meta.url)), '.data', 'topology'));
await mkdir(dir, { recursive: true });
const lock = await lockDataDir(dir).catch((error: unknown) => {
  if (!(error instanceof DataDirLockedError)) throw error;
  say(`refusing to start: ${error.message}`);
  process.exit(1);
});

let topology: Topology | undefined;
let stopping = false;
async function stop(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  topology?.stopRestarting();
  say('stopping in order: nginx, APIs, workers, Temporal UI, Temporal, Redis, PostgreSQL…');
  setTimeout(() => { say('stop took too long; exiting'); process.exit(1); }, 90_000);
  await topology?.stop();
  await lock.release();
  say('stopped');
  process.exit(code);
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void stop(0));

try {
  say(`starting the production layout in ${dir}…`);
  topology = await startTopology({ dir, log: say });
  const { runtime } = topology;
  const pids = Object.entries(runtime.children).map(([role, pid]) => `${role} ${pid}`).join(' · ');
  process.stdout.write([
    '',
    `  Production layout is ready (${((performance.now() - startedAt) / 1000).toFixed(1)} s)`,
    '',
    `  Origin       ${runtime.apiUrl}   (nginx → ${runtime.apiUrls.join(', ')})`,
    `  Temporal UI  ${runtime.uiUrl}   (server ${runtime.temporalAddress} on PostgreSQL)`,
    `  Demo API key ${runtime.demo.apiKey}`,
    `  Pids         ${pids}`,
    `  Logs         ${path.join(dir, 'logs')}`,
    '',
    '  Run the demo app through the origin:',
    `    curl -s -X POST ${runtime.apiUrl}/api/released-app/${runtime.demo.deploymentId}/run -H 'Authorization: Bearer ${runtime.demo.apiKey}' -H 'Content-Type: application/json' -d '{"inputs":{"name":"Ada","n":21},"stream":false}'`,
    '',
    '  Ctrl-C stops everything',
    '',
  ].join('\n') + '\n');
} catch (error) {
  say(`failed to start: ${(error as Error).stack ?? (error as Error).message}`);
  await stop(1);
}
