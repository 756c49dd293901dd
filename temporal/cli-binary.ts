import { execFile } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** v1.5.1 is the newest tag `go install` accepts: later tags carry a `replace` directive it refuses. */
export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal@v1.5.1';

/** Outside the repository so every clone, CI run and later session on this machine reuses the build. */
export const temporalCliCacheDir = (): string =>
  path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'workflow-app-service', 'temporal-cli-v1.5.1');

export type TemporalCliSource =
  | { kind: 'binary'; path: string; origin: 'TEMPORAL_CLI_PATH' | 'PATH' | 'go-install-cache' }
  | { kind: 'sdk-download' };

export const noTemporalMessage = [
  'No Temporal server is available. Provide one of:',
  '  1. TEMPORAL_ADDRESS=host:port of a running Temporal server;',
  '  2. the Temporal CLI: TEMPORAL_CLI_PATH=/path/to/temporal, or `temporal` on PATH;',
  `  3. Go on PATH, so the CLI can be built with \`go install ${TEMPORAL_CLI_MODULE}\` (cached in ${temporalCliCacheDir()}),`,
  '     or internet access for the @temporalio/testing download.',
].join('\n');

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function findOnPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return null;
}

/**
 * Finds the Temporal CLI in the documented order: TEMPORAL_CLI_PATH; `temporal` on PATH; a cached
 * `go install` build (built now when Go exists and the cache is empty); else the SDK's download.
 */
export async function resolveTemporalCli(log: (line: string) => void = () => {}): Promise<TemporalCliSource> {
  const explicit = process.env.TEMPORAL_CLI_PATH?.trim();
  if (explicit) {
    if (!isExecutable(explicit)) throw new Error(`TEMPORAL_CLI_PATH=${explicit} is not an executable file`);
    return { kind: 'binary', path: explicit, origin: 'TEMPORAL_CLI_PATH' };
  }
  const onPath = findOnPath('temporal');
  if (onPath) return { kind: 'binary', path: onPath, origin: 'PATH' };

  const cacheDir = temporalCliCacheDir();
  const cached = path.join(cacheDir, 'temporal');
  if (isExecutable(cached)) return { kind: 'binary', path: cached, origin: 'go-install-cache' };

  const go = findOnPath('go');
  if (go) {
    log(`Building the Temporal CLI once with \`go install ${TEMPORAL_CLI_MODULE}\` (a few minutes; cached in ${cacheDir})`);
    await mkdir(cacheDir, { recursive: true });
    try {
      await execFileAsync(go, ['install', TEMPORAL_CLI_MODULE], {
        env: { ...process.env, GOBIN: cacheDir, CGO_ENABLED: process.env.CGO_ENABLED ?? '0' },
        maxBuffer: 16 * 1024 * 1024,
      });
    } catch (error) {
      log(`go install failed: ${(error as Error).message.split('\n').slice(0, 5).join(' ')}`);
    }
    if (existsSync(cached)) return { kind: 'binary', path: cached, origin: 'go-install-cache' };
  }
  return { kind: 'sdk-download' };
}
