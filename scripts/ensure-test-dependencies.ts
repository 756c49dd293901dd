// Installs the Debian packages `npm test` needs when they are missing, so that `npm test` alone works
// on a fresh Debian machine. Called first by the vitest global setup (test/harness/global-setup.ts)
// and by .ci/run; also runnable by hand: `node --import tsx scripts/ensure-test-dependencies.ts`.
// When everything is installed it only checks that each binary is executable (well under a
// millisecond) and prints nothing.
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface TestDependency {
  /** Absolute path the tests run it from. */
  binary: string;
  /** The Debian package that provides `binary`. */
  aptPackage: string;
  usedBy: string;
}

export const TEST_DEPENDENCIES: readonly TestDependency[] = [
  { binary: '/usr/bin/chromium', aptPackage: 'chromium', usedBy: 'the OAuth consent-page browser test (test/credentials/oauth-browser.test.ts)' },
  { binary: '/usr/bin/redis-server', aptPackage: 'redis-server', usedBy: 'the release rate-limit tests (test/harness/redis.ts)' },
  { binary: '/usr/bin/curl', aptPackage: 'curl', usedBy: 'the board download tests: `curl --range` and a resumed `curl -C -` (test/public-config/)' },
  { binary: '/usr/sbin/dovecot', aptPackage: 'dovecot-imapd', usedBy: 'the connector tests (test/harness/dovecot.ts)' },
  { binary: '/usr/sbin/nginx', aptPackage: 'nginx', usedBy: 'npm run topology and its test (nginx in front of the APIs; test/platform/topology.test.ts)' },
];

const APT_GET = '/usr/bin/apt-get';

export interface CommandResult {
  /** Exit status; null when the command could not be started or was killed by a signal. */
  status: number | null;
  /** stdout and stderr together, shown only when the command fails. */
  output: string;
}

/** Runs `argv[0]` with the arguments `argv.slice(1)`, without a shell. */
export type RunCommand = (argv: readonly string[]) => Promise<CommandResult>;

export interface EnsureTestDependenciesOptions {
  dependencies?: readonly TestDependency[];
  isExecutable?: (file: string) => boolean;
  run?: RunCommand;
  /** Whether this process runs as root (default: `process.getuid() === 0`). */
  isRoot?: boolean;
  /** Receives one line per package installed (default: stderr). */
  log?: (line: string) => void;
}

export const isExecutable = (file: string): boolean => {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

export const runCommand: RunCommand = (argv) => new Promise((resolve) => {
  const [command, ...args] = argv;
  if (!command) return resolve({ status: null, output: 'empty command' });
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString(); });
  child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString(); });
  child.once('error', (error) => resolve({ status: null, output: `${output}${error.message}` }));
  child.once('close', (status) => resolve({ status, output }));
});

/** The command a person runs when this process may not install packages itself. */
export const manualInstallCommand = (packages: readonly string[]) =>
  `sudo apt-get update && sudo apt-get install -y ${packages.join(' ')}`;

const tail = (output: string) => output.trim().split('\n').slice(-20).join('\n');

/**
 * Makes sure every test dependency's binary exists, installing the missing packages with one
 * `apt-get update -qq` and one `apt-get install -y -qq <packages>` (as root, or through passwordless
 * sudo). Throws, naming the command to run, when it cannot install them. Returns what it installed.
 */
export async function ensureTestDependencies(options: EnsureTestDependenciesOptions = {}): Promise<TestDependency[]> {
  const {
    dependencies = TEST_DEPENDENCIES,
    isExecutable: executable = isExecutable,
    run = runCommand,
    isRoot = process.getuid?.() === 0,
    log = (line: string) => { process.stderr.write(`${line}\n`); },
  } = options;

  const missing = dependencies.filter((d) => !executable(d.binary));
  if (missing.length === 0) return [];

  const packages = [...new Set(missing.map((d) => d.aptPackage))];
  const manual = manualInstallCommand(packages);
  const needed = missing.map((d) => `${d.binary} (package ${d.aptPackage}, for ${d.usedBy})`).join('; ');

  if (!executable(APT_GET)) {
    throw new Error(`The tests need ${needed}, and ${APT_GET} is not here to install it. Install the equivalent of: ${manual}`);
  }
  let prefix: string[];
  if (isRoot) prefix = [];
  else if ((await run(['sudo', '-n', 'true'])).status === 0) prefix = ['sudo', '-n'];
  else {
    throw new Error(`The tests need ${needed}. Installing it needs root (or passwordless sudo). Run: ${manual}`);
  }

  const update = await run([...prefix, 'apt-get', 'update', '-qq']);
  if (update.status !== 0) {
    throw new Error(`apt-get update failed (exit ${update.status}) while installing ${packages.join(' ')}:\n${tail(update.output)}\nRun: ${manual}`);
  }
  const install = await run([...prefix, 'env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', 'install', '-y', '-qq', ...packages]);
  if (install.status !== 0) {
    throw new Error(`apt-get install ${packages.join(' ')} failed (exit ${install.status}):\n${tail(install.output)}\nRun: ${manual}`);
  }

  const stillMissing = missing.filter((d) => !executable(d.binary));
  if (stillMissing.length > 0) {
    throw new Error(`apt-get installed ${packages.join(' ')}, but ${stillMissing.map((d) => d.binary).join(' and ')} is still missing`);
  }
  for (const d of missing) log(`[test dependencies] installed ${d.aptPackage} (${d.binary}, for ${d.usedBy})`);
  return missing;
}

// Run as a script (.ci/run): exit 1 with the message when the packages cannot be installed.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    await ensureTestDependencies();
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
}
