/**
 * Runs `task` now and then every `intervalMs` after each pass ends (never two passes at once). A
 * failed pass is logged and retried on the next tick; the timer does not keep the process alive.
 */
export function startPeriodic(task: () => Promise<void>, options: { intervalMs: number; onError: (error: Error) => void }) {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const tick = () => {
    running = task()
      .catch((error: unknown) => options.onError(error as Error))
      .finally(() => { if (!stopped) timer = setTimeout(tick, options.intervalMs).unref(); });
  };
  tick();
  return {
    /** The first pass (and any pass in progress). */
    settled: () => running,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
