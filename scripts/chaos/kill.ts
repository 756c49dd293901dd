// The kill loop: SIGKILL one supervised child (no chance to clean up, like a crash or an OOM kill),
// wait until the supervisor has brought it back (a new pid in runtime.json) and the API is ready
// again, then pause a random 1–6 s so the next kill lands at another point of the runs in flight.
import type { ChaosLayout } from './layout.js';
import { between, pick, type KillTarget, type Rng } from './random.js';
import { isReady, type ChaosStack } from './stack.js';
import { ChaosTimeout, sleep, until } from './timing.js';

export interface KillRecord {
  target: KillTarget;
  /** The child killed: the target itself, or one of its children (`api-2` for `api`). */
  child: string;
  pid: number;
  at: number;
  /** From the kill until a new pid is published and /readyz answers 200; null when it did not heal in time. */
  healMs: number | null;
  /** Targets of other children that were restarted meanwhile (they died with the one we killed). */
  collateral: KillTarget[];
  error?: string;
}

export interface KillLoopOptions {
  stack: ChaosStack;
  layout: ChaosLayout;
  plan: KillTarget[];
  rng: Rng;
  pauseMs: [number, number];
  healTimeoutMs: number;
  log(line: string): void;
}

type Pids = Record<string, number | null>;

/**
 * The pids once the stack is whole again: the killed child has a pid other than `killed`, every
 * other child has one too (a kill can take another child down with it), and the API is ready.
 */
async function healed(stack: ChaosStack, child: string | null, killed: number | null): Promise<Pids | undefined> {
  const pids = (await stack.runtime()).children;
  if ((child && pids[child] === killed) || Object.values(pids).some((pid) => pid === null)) return undefined;
  return (await isReady(stack.info.apiUrl)) ? pids : undefined;
}

/**
 * Runs the plan, pushing a record per kill into `kills` (so the caller keeps them when this throws);
 * stops early (the rest of the plan is not run) when the stack does not heal or exits.
 */
export async function runKillLoop(options: KillLoopOptions, kills: KillRecord[]): Promise<void> {
  const { stack, log } = options;
  for (const [index, target] of options.plan.entries()) {
    if (stack.exited) throw new Error(`the stack exited during the run (${JSON.stringify(stack.exited)}); see ${stack.logFile}`);
    // Normally whole already (we waited for it after the previous kill); bounded all the same.
    const before = await until(() => healed(stack, null, null), options.healTimeoutMs, `stack whole before kill ${index + 1}`, 100);
    const child = pick(options.rng, options.layout.targets[target]!);
    const pid = before[child]!;
    const record: KillRecord = { target, child, pid, at: Date.now(), healMs: null, collateral: [] };
    kills.push(record);
    try {
      process.kill(pid, 'SIGKILL');
    } catch (error) {
      record.error = `kill ${pid}: ${(error as Error).message}`;
      throw new Error(record.error, { cause: error });
    }
    try {
      const after = await until(() => healed(stack, child, pid), options.healTimeoutMs, `${child} back after kill ${index + 1}`, 100);
      record.healMs = Date.now() - record.at;
      const restarted = Object.keys(after).filter((name) => name !== child && after[name] !== before[name]);
      record.collateral = Object.keys(options.layout.targets).filter((t) => options.layout.targets[t]!.some((name) => restarted.includes(name)));
    } catch (error) {
      record.error = (error as Error).message;
      log(`kill ${index + 1}/${options.plan.length}: ${child} (pid ${pid}) did not heal: ${record.error}`);
      if (error instanceof ChaosTimeout) break;
      throw error;
    }
    const pause = between(options.rng, options.pauseMs[0], options.pauseMs[1]);
    const also = record.collateral.length ? ` (${record.collateral.join(', ')} restarted too)` : '';
    log(`kill ${index + 1}/${options.plan.length}: ${child} (pid ${pid}) healed in ${(record.healMs / 1000).toFixed(1)} s${also}; next in ${(pause / 1000).toFixed(1)} s`);
    if (index < options.plan.length - 1) await sleep(pause);
  }
}
