// The kill loop: SIGKILL one supervised child (no chance to clean up, like a crash or an OOM kill),
// wait until the supervisor has brought it back (a new pid in runtime.json) and the API is ready
// again, then pause a random 1–6 s so the next kill lands at another point of the runs in flight.
import { between, KILL_TARGETS, type KillTarget, type Rng } from './random.js';
import { isReady, type ChaosStack } from './stack.js';
import { ChaosTimeout, sleep, until } from './timing.js';

export interface KillRecord {
  target: KillTarget;
  pid: number;
  at: number;
  /** From the kill until a new pid is published and /readyz answers 200; null when it did not heal in time. */
  healMs: number | null;
  /** Other children that were restarted meanwhile (they died with the one we killed). */
  collateral: KillTarget[];
  error?: string;
}

export interface KillLoopOptions {
  stack: ChaosStack;
  plan: KillTarget[];
  rng: Rng;
  pauseMs: [number, number];
  healTimeoutMs: number;
  log(line: string): void;
}

type Pids = Record<KillTarget, number | null>;

/**
 * The pids once the stack is whole again: the killed child has a pid other than `killed`, every
 * other child has one too (a kill can take another child down with it), and the API is ready.
 */
async function healed(stack: ChaosStack, target: KillTarget, killed: number | null): Promise<Pids | undefined> {
  const pids = (await stack.runtime()).children;
  if (pids[target] === killed || KILL_TARGETS.some((t) => pids[t] === null)) return undefined;
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
    const before = await until(() => healed(stack, target, null), options.healTimeoutMs, `stack whole before kill ${index + 1}`, 100);
    const pid = before[target]!;
    const record: KillRecord = { target, pid, at: Date.now(), healMs: null, collateral: [] };
    kills.push(record);
    try {
      process.kill(pid, 'SIGKILL');
    } catch (error) {
      record.error = `kill ${pid}: ${(error as Error).message}`;
      throw new Error(record.error, { cause: error });
    }
    try {
      const after = await until(() => healed(stack, target, pid), options.healTimeoutMs, `${target} back after kill ${index + 1}`, 100);
      record.healMs = Date.now() - record.at;
      record.collateral = KILL_TARGETS.filter((t) => t !== target && after[t] !== before[t]);
    } catch (error) {
      record.error = (error as Error).message;
      log(`kill ${index + 1}/${options.plan.length}: ${target} (pid ${pid}) did not heal: ${record.error}`);
      if (error instanceof ChaosTimeout) break;
      throw error;
    }
    const pause = between(options.rng, options.pauseMs[0], options.pauseMs[1]);
    const also = record.collateral.length ? ` (${record.collateral.join(', ')} restarted too)` : '';
    log(`kill ${index + 1}/${options.plan.length}: ${target} (pid ${pid}) healed in ${(record.healMs / 1000).toFixed(1)} s${also}; next in ${(pause / 1000).toFixed(1)} s`);
    if (index < options.plan.length - 1) await sleep(pause);
  }
}
