import { existsSync } from 'node:fs';

/**
 * On Linux a child is started through util-linux's `setpriv --pdeathsig TERM`, which execs it with
 * prctl(PR_SET_PDEATHSIG): when this process dies, even by SIGKILL where no handler runs, the
 * kernel sends the child SIGTERM. Children in their own process group (kept from a terminal's
 * Ctrl-C, so we stop them in order) would otherwise outlive a crashed `npm start`, test run or
 * bench, using CPU and memory. Elsewhere the command runs as is.
 */
export function withParentDeathSignal(command: string, args: string[]): [string, string[]] {
  const setpriv = '/usr/bin/setpriv';
  return process.platform === 'linux' && existsSync(setpriv) ? [setpriv, ['--pdeathsig', 'TERM', '--', command, ...args]] : [command, args];
}
