/**
 * Keeps one child "service" running: `npm start` supervises its embedded PostgreSQL, Temporal dev
 * server and worker with it, so a crashed or SIGKILLed child comes back by itself on the same
 * address instead of leaving the stack degraded until someone restarts everything.
 */

/** A started child: its pid (null when it runs in this process), a promise that settles when it ends, and how to stop it. */
export interface SupervisedChild {
  pid: number | null;
  /** Settles when the child ends; the value (or rejection) is only used to describe how it ended. */
  exited: Promise<unknown>;
  stop(): Promise<void>;
}

export interface SupervisorOptions {
  /** Names the child in log lines ("PostgreSQL exited (signal SIGKILL); restarting in 1 s"). */
  name: string;
  start(): Promise<SupervisedChild>;
  log(line: string): void;
  /** Called once a restarted child is up (not for the first start): e.g. to publish its new pid. */
  onRestart?(child: SupervisedChild): void | Promise<void>;
  /** First delay before a restart; it doubles on each restart up to `maxDelayMs`. */
  initialDelayMs?: number;
  maxDelayMs?: number;
  /** A child that stayed up this long is healthy again: the next restart waits `initialDelayMs` again. */
  stableAfterMs?: number;
}

export interface Supervisor {
  /** The running child's pid; null while it is down or when it has none. */
  readonly pid: number | null;
  /**
   * Stops restarting but leaves the child running, so its owner can stop the stack in order. A
   * terminal's Ctrl-C also reaches children in our process group, and their exit then is no crash.
   */
  stopRestarting(): void;
  /** Stops supervising and stops the child (waiting for a restart under way to settle first). */
  stop(): Promise<void>;
}

/** How a child ended, for the log line: `{ code, signal }` of a process, or the error of an in-process one. */
export function describeExit(outcome: { value?: unknown; error?: unknown }): string {
  if ('error' in outcome) return `failed: ${outcome.error instanceof Error ? outcome.error.message.split('\n')[0] : String(outcome.error)}`;
  const value = outcome.value as { code?: number | null; signal?: string | null } | undefined;
  if (value?.signal) return `signal ${value.signal}`;
  if (typeof value?.code === 'number') return `code ${value.code}`;
  return 'stopped';
}

const seconds = (ms: number) => `${Number((ms / 1000).toFixed(2))} s`;

/** Starts the child (a failure of this first start is thrown to the caller) and restarts it whenever it ends unasked. */
export async function supervise(options: SupervisorOptions): Promise<Supervisor> {
  const initialDelay = options.initialDelayMs ?? 500;
  const maxDelay = options.maxDelayMs ?? 10_000;
  const stableAfter = options.stableAfterMs ?? 60_000;
  let current: SupervisedChild | null = await options.start();
  let restarting = true;
  let delay = initialDelay;
  let wake: (() => void) | null = null;
  let timer: NodeJS.Timeout | undefined;
  let restartLoop: Promise<void> | null = null;

  const sleep = (ms: number) => new Promise<void>((resolve) => {
    wake = resolve;
    timer = setTimeout(resolve, ms);
  });

  const watch = (child: SupervisedChild) => {
    const upSince = Date.now();
    void child.exited.then((value) => ({ value }), (error: unknown) => ({ error })).then((outcome) => {
      if (current !== child) return;
      current = null;
      if (!restarting) return;
      if (Date.now() - upSince >= stableAfter) delay = initialDelay;
      options.log(`${options.name} exited (${describeExit(outcome)}); restarting in ${seconds(delay)}`);
      restartLoop = restart().finally(() => { restartLoop = null; });
    });
  };

  // Retries until a start succeeds or we stop; each attempt waits twice as long as the one before.
  const restart = async () => {
    for (;;) {
      await sleep(delay);
      if (!restarting) return;
      delay = Math.min(delay * 2, maxDelay);
      let child: SupervisedChild;
      try {
        child = await options.start();
      } catch (error) {
        if (!restarting) return;
        options.log(`${options.name} did not restart (${(error as Error).message.split('\n')[0]}); retrying in ${seconds(delay)}`);
        continue;
      }
      if (!restarting) { await child.stop(); return; } // stopped while it was starting
      current = child;
      watch(child);
      options.log(`${options.name} is back${child.pid ? ` (pid ${child.pid})` : ''}`);
      try {
        await options.onRestart?.(child);
      } catch (error) {
        options.log(`after restarting ${options.name}: ${(error as Error).message}`);
      }
      return;
    }
  };

  watch(current);
  const stopRestarting = () => {
    restarting = false;
    clearTimeout(timer);
    wake?.();
  };
  return {
    get pid() { return current?.pid ?? null; },
    stopRestarting,
    async stop() {
      stopRestarting();
      await restartLoop;
      const child = current;
      current = null;
      await child?.stop();
    },
  };
}

export type ChildExit = { code: number | null; signal: NodeJS.Signals | null };

/**
 * Waits for a child just started to say it serves (`ready`). One that exits first, or stays silent
 * past `timeoutMs`, is stopped and the start fails with the message for that case.
 */
export async function awaitChildReady(options: {
  ready: Promise<void>; exited: Promise<ChildExit>; stop(): Promise<void>; timeoutMs: number;
  exitedMessage(exit: ChildExit): string; timeoutMessage: string;
}): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      options.ready,
      options.exited.then((exit) => Promise.reject(new Error(options.exitedMessage(exit)))),
      new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(options.timeoutMessage)), options.timeoutMs); }),
    ]);
  } catch (error) {
    await options.stop();
    throw error;
  } finally {
    clearTimeout(timer);
  }
}
