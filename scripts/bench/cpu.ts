import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

// Throughput on these 2 cores is bound by CPU, shared by the service, the Temporal server and
// PostgreSQL: the bench prints each one's CPU per run so a figure comes with where its time went.

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

/**
 * Runs `work`, which performs `operations` operations, and reports each source's CPU time per
 * operation, e.g. "this process 14.2 ms, Temporal 12.1 ms"; a source that cannot be read is left out.
 */
export async function cpuPerOperation<T>(sources: CpuSource[], operations: number, work: () => Promise<T>): Promise<{ result: T; perOperation: string }> {
  const before = sources.map(readCpuMs);
  const result = await work();
  const parts = sources.flatMap((source, i) => {
    const [start, end] = [before[i], readCpuMs(source)];
    return start === null || start === undefined || end === null ? [] : [`${source.name} ${((end - start) / operations).toFixed(1)} ms`];
  });
  return { result, perOperation: parts.join(', ') };
}
