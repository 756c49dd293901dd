import { execFile } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

// Temporal's own programs (the CLI with its dev server, the server, its SQL tool, the UI server) are
// built once from their Go modules and kept outside the repository, so every clone, CI run and later
// session on this machine reuses the build. One rule for all of them: a folder per module version.

const execFileAsync = promisify(execFile);

export interface GoProgram {
  /** `go install` targets of one module version, e.g. `go.temporal.io/server/cmd/server@v1.32.2`. */
  targets: string[];
  /** The binaries those targets install (the last element of each package path). */
  binaries: string[];
  /** Cache folder name, one per module version: `temporal-server-v1.32.2`. */
  cacheName: string;
  /**
   * Newer versions of dependencies to build with (`module@version`), for a module that pins one the
   * proxy does not serve: the targets are then built in a throwaway module that requires both.
   */
  upgrades?: string[];
}

export const goBuildCacheRoot = (): string =>
  path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'workflow-app-service');

export const goProgramDir = (program: GoProgram): string => path.join(goBuildCacheRoot(), program.cacheName);

export function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function findOnPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return null;
}

/** The cached binaries' paths by name, or null when any is missing. */
export function cachedGoProgram(program: GoProgram): Record<string, string> | null {
  const dir = goProgramDir(program);
  const paths = Object.fromEntries(program.binaries.map((name) => [name, path.join(dir, name)]));
  return Object.values(paths).every(isExecutable) ? paths : null;
}

/**
 * The program's binaries, built with `go install` into the cache first when missing. GOTOOLCHAIN=auto
 * lets a module that asks for a newer Go than the machine's fetch that toolchain through the module
 * proxy (the server and UI server ask for go ≥ 1.26.10). Null when Go is missing or the build failed
 * (the reason goes to `log`).
 */
export async function buildGoProgram(program: GoProgram, log: (line: string) => void = () => {}): Promise<Record<string, string> | null> {
  const cached = cachedGoProgram(program);
  if (cached) return cached;
  const go = findOnPath('go');
  if (!go) return null;
  const dir = goProgramDir(program);
  log(`Building ${program.binaries.join(', ')} once with \`go install ${program.targets.join(' ')}\` (a few minutes; cached in ${dir})`);
  await mkdir(dir, { recursive: true });
  const env = { ...process.env, GOBIN: dir, CGO_ENABLED: process.env.CGO_ENABLED ?? '0', GOTOOLCHAIN: process.env.GOTOOLCHAIN ?? 'auto' };
  const options = { env, maxBuffer: 16 * 1024 * 1024 };
  try {
    if (!program.upgrades?.length) {
      await execFileAsync(go, ['install', ...program.targets], options);
    } else {
      const moduleDir = await mkdtemp(path.join(os.tmpdir(), 'wfapp-go-build-'));
      try {
        const inModule = { ...options, cwd: moduleDir, env: { ...env, GOFLAGS: '-mod=mod' } };
        await execFileAsync(go, ['mod', 'init', 'wfapp-go-build'], inModule);
        await execFileAsync(go, ['get', ...program.targets, ...program.upgrades], inModule);
        for (const target of program.targets) {
          const pkg = target.slice(0, target.lastIndexOf('@'));
          await execFileAsync(go, ['build', '-o', path.join(dir, pkg.slice(pkg.lastIndexOf('/') + 1)), pkg], inModule);
        }
      } finally {
        await rm(moduleDir, { recursive: true, force: true });
      }
    }
  } catch (error) {
    log(`go build failed: ${(error as Error).message.split('\n').slice(0, 5).join(' ')}`);
  }
  return existsSync(dir) ? cachedGoProgram(program) : null;
}
