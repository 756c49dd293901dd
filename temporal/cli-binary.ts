import { buildGoProgram, findOnPath, goProgramDir, isExecutable, type GoProgram } from './go-build-cache.js';

/**
 * v1.5.1 is the newest tag that builds from the module proxy: later tags (up to v1.9.1) replace
 * `github.com/temporalio/cli/cliext` with a folder of the repository that the module's zip leaves
 * out, and that module is not served on its own (docs/decisions.md "Temporal versions").
 */
export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal@v1.5.1';

const temporalCliProgram: GoProgram = { targets: [TEMPORAL_CLI_MODULE], binaries: ['temporal'], cacheName: 'temporal-cli-v1.5.1' };

/** Outside the repository so every clone, CI run and later session on this machine reuses the build. */
export const temporalCliCacheDir = (): string => goProgramDir(temporalCliProgram);

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

  const built = await buildGoProgram(temporalCliProgram, log);
  if (built) return { kind: 'binary', path: built.temporal!, origin: 'go-install-cache' };
  return { kind: 'sdk-download' };
}
