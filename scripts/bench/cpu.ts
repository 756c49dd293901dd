import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

// Throughput on these 2 cores is bound by CPU, shared by the service, the Temporal server and
// PostgreSQL: the bench prints each one's CPU per run so a figure comes with where its time went.

/** CPU time (ms) of each process of a service, read before and after a load. */
export type CpuSnapshot = Record<string, number>;

/** A snapshot's CPU summed over its processes. */
export const cpuTotal = (cpu: CpuSnapshot): number => Object.values(cpu).reduce((a, b) => a + b, 0);

/** Clock ticks per second of /proc's times (USER_HZ, 100 on every mainstream Linux). */
const ticksPerSecond = (() => {
  try { return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100; } catch { return 100; }
})();

/**
 * CPU time in ms a process has used with every descendant: its own and its reaped children's
 * (utime, stime, cutime, cstime), and the live ones' through /proc's `children` lists (PostgreSQL
 * backends live as long as their pooled connection). Null where there is no /proc or the process is gone.
 */
export function processTreeCpuMs(pid: number): number | null {
  const stat = `/proc/${pid}/stat`;
  if (!existsSync(stat)) return null;
  try {
    // Fields after the command name, which is in parentheses and may itself hold spaces.
    const line = readFileSync(stat, 'utf8');
    const fields = line.slice(line.lastIndexOf(')') + 2).split(' ');
    // utime, stime, cutime and cstime are fields 14 to 17 of stat(5), 11 to 14 here.
    let ticks = 0;
    for (let i = 11; i <= 14; i++) ticks += Number(fields[i]);
    let ms = (ticks * 1000) / ticksPerSecond;
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
    for (const child of children ? children.split(' ') : []) ms += processTreeCpuMs(Number(child)) ?? 0;
    return ms;
  } catch {
    return null;
  }
}

/** A process whose CPU time counts: this one (every thread), or another by pid. */
export type CpuSource = { name: string; pid: number | 'self' | null };

const readCpuMs = (source: CpuSource): number | null => {
  if (source.pid === 'self') {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1000;
  }
  return source.pid === null ? null : processTreeCpuMs(source.pid);
};

/** Each source's CPU time over the spans it measured, per operation: rounds of a kind add up, other work between them does not count. */
export class CpuAccount {
  private readonly totals: Array<number | null>;
  private operations = 0;

  constructor(private readonly sources: CpuSource[]) {
    this.totals = sources.map(() => 0);
  }

  /** Runs `work`, which performs `operations` operations, adding its CPU time to the account. */
  async measure<T>(operations: number, work: () => Promise<T>): Promise<T> {
    const before = this.sources.map(readCpuMs);
    const result = await work();
    this.sources.forEach((source, i) => {
      const [start, end, total] = [before[i], readCpuMs(source), this.totals[i]];
      this.totals[i] = start === null || start === undefined || end === null || total === null || total === undefined ? null : total + end - start;
    });
    this.operations += operations;
    return result;
  }

  /** E.g. "this process 14.2 ms, Temporal 12.1 ms"; a source that cannot be read is left out. */
  get perOperation(): string {
    return this.sources.flatMap((source, i) => {
      const total = this.totals[i];
      return total === null || total === undefined ? [] : [`${source.name} ${(total / this.operations).toFixed(1)} ms`];
    }).join(', ');
  }
}

/**
 * Runs `work`, which performs `operations` operations, and reports each source's CPU time per
 * operation, e.g. "this process 14.2 ms, Temporal 12.1 ms"; a source that cannot be read is left out.
 */
export async function cpuPerOperation<T>(sources: CpuSource[], operations: number, work: () => Promise<T>): Promise<{ result: T; perOperation: string }> {
  const account = new CpuAccount(sources);
  const result = await account.measure(operations, work);
  return { result, perOperation: account.perOperation };
}
