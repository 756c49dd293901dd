import { describe, expect, it } from 'vitest';
import {
  ensureTestDependencies, TEST_DEPENDENCIES, type CommandResult, type TestDependency,
} from './ensure-test-dependencies.js';

const deps: TestDependency[] = [
  { binary: '/usr/bin/chromium', aptPackage: 'chromium', usedBy: 'the browser test' },
  { binary: '/usr/bin/redis-server', aptPackage: 'redis-server', usedBy: 'the rate-limit tests' },
];

/**
 * A fake machine: `present` binaries exist; a successful `apt-get install` makes its packages'
 * binaries exist. Every command is recorded, none is run.
 */
function fakeMachine(present: string[], answers: { sudo?: number; update?: number; install?: number; installs?: boolean } = {}) {
  const files = new Set([...present, '/usr/bin/apt-get']);
  const calls: string[][] = [];
  const lines: string[] = [];
  const run = async (argv: readonly string[]): Promise<CommandResult> => {
    calls.push([...argv]);
    const rest = argv[0] === 'sudo' ? argv.slice(2) : argv;
    if (argv[0] === 'sudo' && argv[2] === 'true') return { status: answers.sudo ?? 1, output: 'sudo: a password is required' };
    if (rest[0] === 'apt-get' && rest[1] === 'update') return { status: answers.update ?? 0, output: 'E: could not reach the mirror' };
    const install = rest.indexOf('install');
    if (install >= 0 && (answers.install ?? 0) === 0) {
      if (answers.installs !== false) {
        for (const pkg of rest.slice(install + 1).filter((a) => !a.startsWith('-'))) {
          for (const d of deps) if (d.aptPackage === pkg) files.add(d.binary);
        }
      }
      return { status: 0, output: '' };
    }
    return { status: answers.install ?? 1, output: 'E: Unable to locate package' };
  };
  const options = { dependencies: deps, isExecutable: (f: string) => files.has(f), run, log: (l: string) => lines.push(l) };
  return { calls, lines, files, options };
}

const UPDATE = ['apt-get', 'update', '-qq'];
const install = (...packages: string[]) => ['env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', 'install', '-y', '-qq', ...packages];

describe('ensureTestDependencies', () => {
  it('runs nothing and prints nothing when every binary is there', async () => {
    const m = fakeMachine(['/usr/bin/chromium', '/usr/bin/redis-server']);
    expect(await ensureTestDependencies({ ...m.options, isRoot: true })).toEqual([]);
    expect(m.calls).toEqual([]);
    expect(m.lines).toEqual([]);
  });

  it('as root, runs one apt-get update and one install of exactly the missing package, and prints one line for it', async () => {
    const m = fakeMachine(['/usr/bin/chromium']);
    const installed = await ensureTestDependencies({ ...m.options, isRoot: true });
    expect(m.calls).toEqual([UPDATE, install('redis-server')]);
    expect(installed.map((d) => d.aptPackage)).toEqual(['redis-server']);
    expect(m.lines).toHaveLength(1);
    expect(m.lines[0]).toContain('installed redis-server');
    expect(m.lines[0]).toContain('/usr/bin/redis-server');
  });

  it('installs both packages with one update and one install when both are missing', async () => {
    const m = fakeMachine([]);
    await ensureTestDependencies({ ...m.options, isRoot: true });
    expect(m.calls).toEqual([UPDATE, install('chromium', 'redis-server')]);
    expect(m.lines).toHaveLength(2);
    expect(m.lines[0]).toContain('installed chromium');
    expect(m.lines[1]).toContain('installed redis-server');
  });

  it('not root but with passwordless sudo: the same two commands through sudo -n', async () => {
    const m = fakeMachine(['/usr/bin/redis-server'], { sudo: 0 });
    await ensureTestDependencies({ ...m.options, isRoot: false });
    expect(m.calls).toEqual([['sudo', '-n', 'true'], ['sudo', '-n', ...UPDATE], ['sudo', '-n', ...install('chromium')]]);
    expect(m.lines).toHaveLength(1);
  });

  it('not root and no passwordless sudo: fails naming the missing binary and the exact command, and runs no apt-get', async () => {
    const m = fakeMachine(['/usr/bin/redis-server'], { sudo: 1 });
    const error = await ensureTestDependencies({ ...m.options, isRoot: false }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    expect(message).toContain('/usr/bin/chromium');
    expect(message).toContain('root');
    expect(message).toContain('Run: sudo apt-get update && sudo apt-get install -y chromium');
    expect(message).not.toContain('redis-server');
    expect(m.calls).toEqual([['sudo', '-n', 'true']]);
    expect(m.lines).toEqual([]);
  });

  it('fails without installing when apt-get is not on the machine', async () => {
    const m = fakeMachine([]);
    m.files.delete('/usr/bin/apt-get');
    await expect(ensureTestDependencies({ ...m.options, isRoot: true })).rejects.toThrow(/apt-get is not here.*sudo apt-get install -y chromium redis-server/);
    expect(m.calls).toEqual([]);
  });

  it('fails with apt-get output when the update fails, and does not go on to install', async () => {
    const m = fakeMachine([], { update: 100 });
    await expect(ensureTestDependencies({ ...m.options, isRoot: true })).rejects.toThrow(/apt-get update failed \(exit 100\)[\s\S]*could not reach the mirror/);
    expect(m.calls).toEqual([UPDATE]);
    expect(m.lines).toEqual([]);
  });

  it('fails with apt-get output when the install fails', async () => {
    const m = fakeMachine([], { install: 100 });
    await expect(ensureTestDependencies({ ...m.options, isRoot: true })).rejects.toThrow(/apt-get install chromium redis-server failed \(exit 100\)[\s\S]*Unable to locate package/);
    expect(m.lines).toEqual([]);
  });

  it('fails when apt-get succeeded but the binary is still not there', async () => {
    const m = fakeMachine(['/usr/bin/chromium'], { installs: false });
    await expect(ensureTestDependencies({ ...m.options, isRoot: true })).rejects.toThrow(/\/usr\/bin\/redis-server is still missing/);
    expect(m.lines).toEqual([]);
  });

  it('the default list names the binaries the tests run', () => {
    expect(TEST_DEPENDENCIES.map((d) => [d.binary, d.aptPackage])).toEqual([
      ['/usr/bin/chromium', 'chromium'],
      ['/usr/bin/redis-server', 'redis-server'],
      ['/usr/bin/curl', 'curl'],
      ['/usr/sbin/dovecot', 'dovecot-imapd'],
      ['/usr/sbin/nginx', 'nginx'],
    ]);
  });
});
