// One `npm start` per data folder. Two starts on one folder would run two Temporal dev servers on
// one SQLite file (and two PostgreSQL servers on one cluster): both then fail in ways nothing heals
// (SQLITE_BUSY on signals, shard status unknown, workflow starts timing out). The first start holds
// `<DATA_DIR>/start.lock`, naming its pid; a second start refuses before it starts anything.
import { open, readFile, rm } from 'node:fs/promises';
import path from 'node:path';

export interface DataDirLock {
  readonly file: string;
  release(): Promise<void>;
}

interface LockOwner { pid: number; startedAt: string; processStart: string | null }

export class DataDirLockedError extends Error {
  constructor(readonly dataDir: string, readonly owner: LockOwner) {
    super(
      `another npm start (pid ${owner.pid}, since ${owner.startedAt}) is using the data folder ${dataDir}. `
      + 'Stop it first, or give this one a folder of its own, e.g. DATA_DIR=/path/to/another/folder npm start',
    );
  }
}

/**
 * When the process started, in clock ticks since boot (field 22 of /proc/<pid>/stat), so that a
 * pid the kernel has since given to another process does not hold the lock; null off Linux.
 */
async function processStartOf(pid: number): Promise<string | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

async function isAlive(owner: LockOwner): Promise<boolean> {
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    // EPERM: it exists and belongs to someone else.
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (owner.processStart === null) return true;
  const now = await processStartOf(owner.pid);
  return now === null || now === owner.processStart;
}

async function readOwner(file: string): Promise<LockOwner | null> {
  try {
    const owner = JSON.parse(await readFile(file, 'utf8')) as Partial<LockOwner>;
    return typeof owner.pid === 'number' ? { pid: owner.pid, startedAt: String(owner.startedAt), processStart: owner.processStart ?? null } : null;
  } catch {
    return null;
  }
}

/**
 * Takes the data folder's lock for this process, or throws `DataDirLockedError` naming the live
 * process that holds it. A lock left by a process that is gone (SIGKILL, power loss) is taken over.
 */
export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  const file = path.join(dataDir, 'start.lock');
  const me: LockOwner = { pid: process.pid, startedAt: new Date().toISOString(), processStart: await processStartOf(process.pid) };
  for (let attempt = 0; ; attempt++) {
    try {
      // 'wx': created only if absent, atomically, so two starts racing cannot both get it.
      const handle = await open(file, 'wx');
      await handle.writeFile(JSON.stringify(me));
      await handle.close();
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt >= 3) throw error;
    }
    const owner = await readOwner(file);
    if (owner && await isAlive(owner)) throw new DataDirLockedError(dataDir, owner);
    // Stale (its process is gone) or half-written by a start that died at once: take it over.
    // A process that is still writing its lock gets a moment first.
    if (!owner) await new Promise((resolve) => setTimeout(resolve, 100));
    if (!owner && await readOwner(file)) continue;
    await rm(file, { force: true });
  }
  return {
    file,
    async release() {
      const owner = await readOwner(file);
      if (owner?.pid === process.pid) await rm(file, { force: true });
    },
  };
}
